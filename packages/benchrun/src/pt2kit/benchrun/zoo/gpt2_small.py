"""GPT-2 small (transformers, 124M parameters, random weights, no KV cache): batch 8, sequence 128. Needs transformers."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_float32_matmul_precision("high")  # TF32 matmuls on CUDA, as performance work runs them
model = GPT2LMHeadModel(GPT2Config(use_cache=False)).eval()
example_inputs = {"input_ids": torch.randint(0, 50257, (8, 128))}
