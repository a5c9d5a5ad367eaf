"""Mixtral mixture-of-experts causal LM (transformers, random weights): top-k routing over experts.
One layer: a second runs the same module code again (the same ops, mask, cache entry kind), doubling
every tool's trace and compile and showing nothing more."""
import torch
from transformers import MixtralConfig, MixtralForCausalLM

torch.manual_seed(0)
config = MixtralConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                       max_position_embeddings=64)
model = MixtralForCausalLM(config).eval()
example_inputs = {"input_ids": torch.randint(0, 128, (2, 8))}
