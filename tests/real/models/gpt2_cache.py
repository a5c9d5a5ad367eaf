"""GPT-2 causal LM (transformers, random weights) returning its KV cache (a DynamicCache).
One layer: a second runs the same module code again (the same ops, mask, cache entry kind), doubling
every tool's trace and compile and showing nothing more."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(vocab_size=128, n_embd=32, n_layer=1, n_head=2, n_positions=64, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(config).eval()
example_inputs = {"input_ids": torch.randint(0, 128, (2, 12)), "use_cache": True}
