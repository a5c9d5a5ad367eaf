"""GPT-2 (transformers, random weights) with a dynamic sequence length, and a backend with a planted
fault: it scales every tanh's output by 1.01 (GPT-2's gelu_new is built on tanh).
One layer: a second runs the same module code again (the same ops, mask, cache entry kind), doubling
every tool's trace and compile and showing nothing more."""
import torch
from transformers import GPT2Config, GPT2Model

torch.manual_seed(0)
config = GPT2Config(vocab_size=128, n_embd=32, n_layer=1, n_head=2, n_positions=64)
model = GPT2Model(config).eval()
input_ids = torch.randint(0, 128, (2, 12))
torch._dynamo.mark_dynamic(input_ids, 1)
example_inputs = {"input_ids": input_ids, "use_cache": False}


def tanh_bug(gm, example_inputs):
    """A torch.compile backend: the Dynamo graph with each tanh's output times 1.01."""
    for n in list(gm.graph.nodes):
        if (n.op == "call_function" and n.target is torch.tanh) or (n.op == "call_method" and n.target == "tanh"):
            with gm.graph.inserting_after(n):
                scaled = gm.graph.call_function(torch.mul, (n, 1.01))
            n.replace_all_uses_with(scaled)
            scaled.args = (n, 1.01)
    gm.recompile()
    return gm.forward
