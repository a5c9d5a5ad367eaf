"""A forward behind a **kwargs decorator, as transformers wraps every model: Dynamo compiles the
wrapper, so its guards read kwargs['x'] rather than x."""
import functools

import torch


def keeps_kwargs(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    return wrapper


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    @keeps_kwargs
    def forward(self, x, mask):
        return self.fc(x) * mask


model = Block()
example_inputs = {"x": torch.randn(4, 16), "mask": torch.ones(4, 16)}
