"""A ViT-style block in plain torch: a strided convolution as patch embedding, a LayerNorm and a ReLU MLP
(the ReLU is where Inductor's planted triton bug goes)."""
import torch


class PatchEmbed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = torch.nn.Conv2d(3, 128, kernel_size=8, stride=8)
        self.norm = torch.nn.LayerNorm(128)
        self.fc1 = torch.nn.Linear(128, 512)
        self.fc2 = torch.nn.Linear(512, 128)

    def forward(self, x):
        h = self.norm(self.proj(x).flatten(2).transpose(1, 2))
        return h + self.fc2(torch.relu(self.fc1(h)))  # line 17


model = PatchEmbed().eval()
example_inputs = (torch.randn(8, 3, 64, 64),)
