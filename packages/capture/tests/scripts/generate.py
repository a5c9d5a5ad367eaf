"""A user's inference script: a small GPT-2 built from a config, its forward compiled, model.generate()."""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=32)).eval()
model.forward = torch.compile(model.forward, backend=os.environ.get("BACKEND", "inductor"))
seen = []  # the logits of each compiled call, in order
model.register_forward_hook(lambda module, args, out: seen.append(out.logits.detach().clone()))
ids = torch.randint(0, 100, (1, 5))
out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False, pad_token_id=0)
print("generated", out[0].tolist())
torch.save(seen, sys.argv[1])
