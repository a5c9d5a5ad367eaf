"""A script compiled with its own backend function, which plants a forward bug (every relu made an abs),
defined in the script itself (tests/test_e2e_backend.py)."""
import torch


def my_backend(gm, example_inputs):
    relus = (torch.relu, torch.nn.functional.relu, torch.ops.aten.relu.default)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in relus:
            node.target, node.kwargs = torch.abs, {}
    gm.recompile()
    return gm.forward


def run():
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with torch.no_grad():
        print(torch.compile(net, backend=my_backend)(torch.randn(4, 8)).sum().item())


if __name__ == "__main__":
    run()
