"""A training loop whose own backend's softmax overflows once training has grown the logits: the
backend (naive_softmax, a function of this file) swaps torch's softmax for exp(x) / sum(exp(x)), which
is right while the logits stay small. Each SGD step on -logits.mean() lifts fc's bias by 30: the
logits are 30 at step 1, 60 at step 2 and 90 at step 3, where exp overflows float32 and the
probabilities are NaN (eager's softmax subtracts the max: finite). The first call's values pass."""

import torch


def _naive_softmax(x, dim=-1, **kwargs):
    e = x.exp()
    return e / e.sum(dim, keepdim=True)


def naive_softmax(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (torch.softmax, torch.nn.functional.softmax):
            node.target = _naive_softmax
        elif node.op == "call_method" and node.target == "softmax":
            node.op, node.target = "call_function", _naive_softmax
    gm.recompile()
    return gm.forward


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 8)
        with torch.no_grad():
            self.fc.weight.zero_()
            self.fc.bias.fill_(30.0)

    def forward(self, x):
        logits = self.fc(x)
        return torch.softmax(logits, dim=-1), logits


if __name__ == "__main__":
    model = Net()
    step = torch.compile(model, backend=naive_softmax)
    opt = torch.optim.SGD(model.parameters(), lr=240.0)
    x = torch.ones(2, 4) * 0.01
    for i in range(1, 6):
        probs, logits = step(x)
        loss = -logits.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {i}: max logit {logits.max().item():.1f}, probs finite {bool(probs.isfinite().all())}")
