"""The values of the tensors a captured graph takes, for the capture boot's writer: the run's budget of
saved bytes, a hashing file to save through, the inputs that share a storage (a seeded tensor's range is
``pt2kit_portable.value_range``, minify's specs' rule too).

Runs inside the user's interpreter: stdlib + torch (imported when called).

Guarantees: :class:`RunBudget` is one count shared by every process of
the run (a file under the scratch dir, changed under an exclusive ``flock``). Not guaranteed: that the
count is exact across a process killed between reserving and writing (it then counts bytes never
written: the budget errs toward seeding).
"""

from __future__ import annotations

import fcntl
import hashlib
from pathlib import Path
from typing import Any

from pt2kit_portable import is_leaf


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


class Shared:
    """Inputs that share one storage in the script (``f(a, a[1])``; Dynamo hands the backend both, and an
    in-place write into one shows in the other): the span of storage they cover is one tensor of the
    model file (saved or seeded as any tensor), each of them a view of it (its ``_view``), as PyTorch's
    ``InputWriter`` writes one storage for every tensor on it. Only ``plain`` inputs (real values, not the
    script's parameters or buffers, which are the module's state, written on their own) of one dtype."""

    def __init__(self, args: list[Any], plain: list[bool]) -> None:
        import torch

        by_storage: dict[tuple[str, int], list[int]] = {}
        for i, (a, ok) in enumerate(zip(args, plain, strict=False)):
            if (ok and a.layout == torch.strided and not a.is_nested and a.numel() and not a.is_conj()
                    and not a.is_neg()):
                by_storage.setdefault((str(a.device), a.untyped_storage().data_ptr()), []).append(i)
        self.groups = {i: g for g in by_storage.values() if len(g) > 1 and len({args[j].dtype for j in g}) == 1
                       for i in g}
        self.args, self.lines, self.made = args, [], {}  # made: a group's first position -> (name, lo, kind)

    def expr(self, i: int, tensors: Any) -> tuple[str, str] | None:
        """(expression, "saved" | "seeded") of input ``i`` as a view of its group's storage (``tensors``: the
        model file's :class:`pt2kit_capture_tensors.Tensors`, which saves or seeds that storage); None: it shares none."""
        group = self.groups.get(i)
        if group is None:
            return None
        if group[0] not in self.made:
            ts = [self.args[j] for j in group]
            lo = 0  # from the storage's start: each view keeps the script's storage offset
            hi = max(t.storage_offset() + sum((n - 1) * st for n, st in zip(t.shape, t.stride(), strict=True)) + 1
                     for t in ts)
            span = ts[0].detach().as_strided((hi - lo,), (1,), lo)
            value, kind = tensors.expr(span, seed=group[0])
            name = f"_storage{len(self.lines)}"
            self.lines.append(f"{name} = {value}  # the storage inputs {', '.join(map(str, group))} share")
            self.made[group[0]] = (name, lo, kind)
        name, lo, kind = self.made[group[0]]
        t = self.args[i]
        leaf = "" if is_leaf(t) else ", leaf=False"
        return (f"_view({name}, {tuple(t.shape)!r}, {tuple(t.stride())!r}, {t.storage_offset() - lo}, "
                f"{bool(t.requires_grad)}{leaf})"), kind
