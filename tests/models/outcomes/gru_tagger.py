"""nothing compiled: Dynamo will not trace an nn.GRU, so torch.compile hands its backend no graph."""
import torch


class Tagger(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = torch.nn.GRU(8, 8, batch_first=True, bidirectional=True)
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.out(h)


torch.manual_seed(0)
model = Tagger()
example_inputs = (torch.randn(2, 5, 8),)
