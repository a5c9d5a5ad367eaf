import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(inplace=True))
        self.head = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.features(x)  # line 11
        return self.head(y.mean(dim=(2, 3)))


model = Net()
example_inputs = (torch.randn(16, 3, 16, 16),)
