"""flex_attention with a causal block mask and a score_mod that takes abs."""
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def score_mod(score, b, h, q, kv):
    return score - torch.abs(q - kv) * 0.1


def causal(b, h, q, kv):
    return q >= kv


class Model(torch.nn.Module):
    def forward(self, q, k, v):
        mask = create_block_mask(causal, 1, 1, 128, 128, device="cpu")
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=mask)


torch.manual_seed(0)
model = Model()
example_inputs = tuple(torch.randn(1, 2, 128, 16) for _ in range(3))
