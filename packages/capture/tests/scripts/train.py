"""A user's training loop: a small GPT-2 built from a config, AdamW, three steps of torch.compile(model)."""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16,
                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
model = GPT2LMHeadModel(config)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
compiled = torch.compile(model)
ids = torch.randint(0, 64, (2, 8))
losses = []
for step in range(3):
    loss = compiled(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    losses.append(loss.detach())
    print(f"step {step} loss {loss.item():.4f}")
torch.save({"losses": losses, "parameters": [n for n, _ in model.named_parameters()]}, sys.argv[1])
