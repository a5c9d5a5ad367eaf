"""A training script whose forward scales its batch in place (`x.mul_(0.5)`): legal, since the batch
does not require grad in the script's step (what `pt2kit capture -- python train_inplace.py | kdiff`
takes). The eager backend keeps it cheap: Dynamo hands every backend the same graph."""
import torch


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        x.mul_(0.5)
        return self.fc(x).relu()


torch.manual_seed(0)
model = Scaled()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = torch.compile(model, backend="eager")
for _ in range(2):
    loss = step(torch.randn(3, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained")
