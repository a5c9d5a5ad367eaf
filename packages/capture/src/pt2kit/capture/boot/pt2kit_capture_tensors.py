"""Each tensor of a captured graph's model file as an expression, for the capture boot's writer: saved
(``torch.save`` of its bytes under ``t/<sha256>.pt``, within the values and run budgets) or seeded in its
real range (:class:`Tensors`), in the script's layout (:func:`layout_args`), a jagged nested tensor as
its values and offsets (:func:`jagged_inputs`), a size or stride as ints (:func:`shape`, :func:`dims`).

Runs inside the user's interpreter: stdlib + torch (imported when called). Separate from
:mod:`pt2kit_capture_write`, which writes the model file's code (its classes, ``Model``,
``example_inputs``) around these expressions: a backward's incoming gradient
(:mod:`pt2kit_capture_backward`) needs the expressions and none of the file.

Guarantees: a tensor is read, never changed; the rest on saved and seeded values (exact bytes, a seeded
range read in chunks, a view not saved with its whole storage) are :mod:`pt2kit_capture_write`'s
docstring's. Not guaranteed: a seeded tensor's exact values (write's docstring says when one is seeded).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pt2kit_capture_torchapi as api
from pt2kit_capture_code import literal
from pt2kit_capture_values import Hashing, RunBudget

from pt2kit_portable import is_leaf, scratch_tensor_path, storage_reach, value_range


class Tensors:
    """Where each tensor's value comes from in the model file: saved (its bytes), or seeded in [lo, hi]."""

    def __init__(self, pdir: Path, values: str, budget: int, run: RunBudget | None = None) -> None:
        self.pdir, self.values, self.budget, self.run = pdir, values, budget, run
        self.spent = 0
        self.files: list[str] = []

    def expr(self, t: Any, seed: int) -> tuple[str, str]:
        """(Python expression that rebuilds t, "saved" | "seeded")."""
        import torch

        meta = (f"{shape(t.shape)!r}, {shape(t.stride())!r}, {t.dtype}, {str(t.device)!r}, "
                f"{bool(t.requires_grad)}")
        # an input that was no leaf (x + 1 of an x that requires grad) is rebuilt as none: a backend may look;
        # one at an offset into a storage, or in a larger one, is made so again (make_tensor)
        leaf = ("" if is_leaf(t) else ", leaf=False") + layout_args(t)
        nbytes = t.numel() * t.element_size()
        fake = api.is_fake(t)
        wanted = self.values == "all" or (self.values == "small" and self.spent + nbytes <= self.budget)
        if not fake and wanted and (self.run is None or self.run.reserve(nbytes)):
            sha, size = self._save(t, nbytes)
            self.spent += nbytes
            return f"_load({sha!r}, {size}, {meta}{leaf})", "saved"
        # a fake tensor has no values (DDP's per-bucket graphs): a range for the dtype, said in the header
        lo, hi = (-1.0, 1.0) if fake and t.dtype.is_floating_point else (0, 0)
        if not fake and t.numel() and t.dtype != torch.bool and not t.dtype.is_complex:
            lo, hi = value_range(t) or (lo, hi)
        return f"_seeded({seed}, {meta}, lo={literal(lo)}, hi={literal(hi)}{leaf})", "seeded"

    def _save(self, t: Any, reserved: int) -> tuple[str, int]:
        import torch

        cpu = t.detach().resolve_conj().resolve_neg()
        whole = (cpu.device.type == "cpu" and cpu.is_contiguous() and cpu.storage_offset() == 0
                 and cpu.untyped_storage().nbytes() == reserved)
        if not whole:  # just this view's elements: torch.save of a view would save its whole storage
            cpu = cpu.to("cpu", copy=True, memory_format=torch.contiguous_format)
        folder = self.pdir / "t"
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{os.getpid()}-{len(self.files)}.tmp"
        try:
            with open(tmp, "wb") as f:  # a file object, not a name: torch.save's archive name stays "archive"
                out = Hashing(f)
                torch.save(cpu, out)
            sha, size = out.sha.hexdigest(), tmp.stat().st_size
            name = scratch_tensor_path(sha)
            if (self.pdir / name).exists():  # the same bytes, saved by an earlier graph
                tmp.unlink()
                if self.run is not None:
                    self.run.release(reserved)
            else:
                tmp.replace(self.pdir / name)
        finally:
            tmp.unlink(missing_ok=True)
        if name not in self.files:
            self.files.append(name)
        return sha, size


def layout_args(t: Any) -> str:
    """``, offset=N, storage=M`` where ``t`` (a strided tensor) starts at an offset into its storage or its
    storage holds more than its layout reaches (a slice of a larger tensor): what make_tensor needs, beside
    shape and stride, to lay it out as the script had it. A fake tensor's storage has no size: its offset."""
    offset, sizes, strides = api.int_hint(t.storage_offset()) or 0, shape(t.shape), shape(t.stride())
    if None in sizes or None in strides:  # a size with no hint: its layout is the compiler's to pick
        return f", offset={offset}" if offset else ""
    storage = 0 if api.is_fake(t) else t.untyped_storage().nbytes() // max(t.element_size(), 1)
    return (f", offset={offset}" if offset else "") + \
        (f", storage={storage}" if storage > storage_reach(sizes, strides, offset) else "")


def shape(sizes: Any) -> tuple[int | None, ...]:
    """A size or stride as ints; a fake tensor's symbolic dims by their hint, which guards on nothing."""
    return tuple(api.int_hint(n) for n in sizes)


def dims(sizes: Any) -> list[int | str]:
    """A size or stride as the manifest writes it: ints, a dim with no int (a jagged tensor's ragged size
    ``j1``, a data-dependent size) by its name."""
    return [str(n) if h is None else h for n, h in zip(sizes, shape(sizes), strict=True)]


def jagged_inputs(placeholders: list[Any], args: list[Any], tensors: Tensors,
                  ) -> tuple[dict[int, tuple[str, str, dict[str, Any]]], dict[str, str]]:
    """The jagged nested tensors among the inputs: {position: (variable, the lines that build it before
    example_inputs, its manifest fields)}, and {Dynamo's symbol of a ragged size: the expression of it}. Dynamo
    hands its graph the jagged tensor and its ragged size as a symbol (``s71``) the script's call binds to
    the tensor's nested int: the model file passes ``_jagged_3.size(1)``, that nested int, as the script did.
    The values are kept or seeded as any tensor; the offsets (the rows' structure) always, as a literal, one
    tensor for the inputs that shared one in the script: their nested int is then one too (``a * b`` of two
    jagged tensors with the same rows needs it)."""
    out: dict[int, tuple[str, str, dict[str, Any]]] = {}
    sizes: dict[str, str] = {}
    shared: dict[str, str] = {}  # the script's nested int (j1): the variable of its offsets
    for i, (node, arg) in enumerate(zip(placeholders, args, strict=False)):
        parts = api.jagged_parts(arg)
        if parts is None:
            continue
        values, offsets, lengths, idx = parts
        var, lines = f"_jagged_{i}", []
        if str(arg.shape[idx]) not in shared:
            shared[str(arg.shape[idx])] = f"_offsets_{i}"
            lines.append(f"_offsets_{i} = torch.tensor({offsets.tolist()!r}, dtype={offsets.dtype}, "
                         f"device={str(offsets.device)!r})")
        expr, kind = tensors.expr(values.detach(), seed=i)
        holes = "None" if lengths is None else f"torch.tensor({lengths.tolist()!r}, dtype={lengths.dtype}, " \
                                                f"device={str(lengths.device)!r})"
        lines.append(f"{var} = _jagged({expr}, {shared[str(arg.shape[idx])]}, {holes}, {idx}, "
                     f"{bool(arg.requires_grad)})")
        out[i] = (var, "\n".join(lines), {
            "dtype": str(arg.dtype), "shape": dims(arg.shape), "stride": dims(arg.stride()), "device": str(arg.device),
            "requires_grad": bool(arg.requires_grad), "value": kind, "layout": "jagged",
            "offsets": [int(o) for o in offsets.tolist()]})
        fake = node.meta.get("example_value", node.meta.get("val"))
        if fake is not None and len(fake.shape) > idx:
            sizes[str(fake.shape[idx])] = f"{var}.size({idx})"
    return out, sizes
