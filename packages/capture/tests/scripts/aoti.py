"""A user's AOT Inductor script: export a model, compile it to a package, load it and run it."""
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


torch.manual_seed(0)
net = Net().eval()
x = torch.randn(3, 8)
with torch.no_grad():
    ep = torch.export.export(net, (x,))
    path = torch._inductor.aoti_compile_and_package(ep, package_path=sys.argv[1] + ".pt2")
    out = torch._inductor.aoti_load_package(path)(x)
torch.save({"aoti/0": out}, sys.argv[1])
