"""The values of the tensors a captured graph takes, for the capture boot's writer: a seeded tensor's
range, the run's budget of saved bytes, a hashing file to save through.

Runs inside the user's interpreter: stdlib + torch (imported when called).

Guarantees: :func:`value_range` reads a tensor ``CHUNK`` elements at a time: a few MB of scratch, never
a copy of the tensor, whatever its size; :class:`RunBudget` is one count shared by every process of
the run (a file under the scratch dir, changed under an exclusive ``flock``). Not guaranteed: that the
count is exact across a process killed between reserving and writing (it then counts bytes never
written: the budget errs toward seeding).
"""

from __future__ import annotations

import fcntl
import hashlib
from pathlib import Path
from typing import Any

# elements per step of a seeded tensor's range: its scratch (a mask and two selections) stays a few MB
CHUNK = 1 << 18


def value_range(t: Any) -> tuple[Any, Any] | None:
    """(lo, hi) of t's finite values (None: it has none), read ``CHUNK`` elements at a time: the scratch
    stays a few MB however large t is (a filtered copy of a 512 MiB input cost the script 1.6 GB)."""
    import torch

    lo = hi = None
    floating = t.dtype.is_floating_point
    with torch.no_grad():
        for part in _chunks(t.detach(), CHUNK):
            flat = part.reshape(-1)  # a copy of at most CHUNK elements, where part is not contiguous
            if floating:
                finite = torch.isfinite(flat)
                if not bool(finite.any()):
                    continue
                a = float(torch.where(finite, flat, float("inf")).min())
                b = float(torch.where(finite, flat, float("-inf")).max())
            else:
                a, b = int(flat.min()), int(flat.max())
            lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
    return None if lo is None else (lo, hi)


def _chunks(t: Any, limit: int) -> Any:
    """Views of t covering it, each of at most ``limit`` elements (along its first dims)."""
    if t.numel() <= limit or t.dim() == 0:
        yield t
        return
    d = next(i for i, n in enumerate(t.shape) if n > 1)
    size = t.shape[d]
    row = t.numel() // size
    if row <= limit:
        step = max(1, limit // row)
        for i in range(0, size, step):
            yield t.narrow(d, i, min(step, size - i))
    else:
        for i in range(size):
            yield from _chunks(t.select(d, i), limit)


class RunBudget:
    """The bytes of tensor files every process of one run may write together (``--max-run-bytes``): a
    count in ``<scratch>/run-bytes``, changed under an exclusive lock, so ranks and workers share it."""

    def __init__(self, path: Path, limit: int | None) -> None:
        self.path, self.limit = path, limit
        self.spent = False  # a tensor was seeded because the run's budget was spent

    def _add(self, n: int, check: bool) -> bool:
        with open(self.path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            used = int(f.read() or 0)
            if check and self.limit is not None and used + n > self.limit:
                return False
            f.seek(0)
            f.truncate()
            f.write(str(max(0, used + n)))
            return True

    def reserve(self, n: int) -> bool:
        """Take n bytes if the run has them left; else False (the tensor is seeded)."""
        if self.limit is None:
            return True
        ok = self._add(n, check=True)
        self.spent = self.spent or not ok
        return ok

    def release(self, n: int) -> None:
        """Give back what a tensor did not write (its file was there already: the same bytes)."""
        if self.limit is not None:
            self._add(-n, check=False)


class Hashing:
    """A file torch.save writes through, hashing the bytes on their way (never read back)."""

    def __init__(self, f: Any) -> None:
        self.f, self.sha = f, hashlib.sha256()

    def write(self, data: Any) -> int:
        self.sha.update(data)
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()
