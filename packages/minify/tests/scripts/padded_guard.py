"""A failure only the compiled run shows (the script asserts torch.compile is disabled), beside setup it does
not need; no torch: each candidate run costs a fork, not a compile."""

import os


def make(n):
    return [i * 2 for i in range(n)]


print(make(4))
assert os.environ.get("TORCHDYNAMO_DISABLE") == "1", "the compiled run differs"
