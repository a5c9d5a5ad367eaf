"""From the printer's output (plus the package's wrapper and Inductor's provenance) to `kernel` fields.

Torch-free: the parent builds the records after the child is gone, so a run that crashed half way
still reports every launch the printer got out.

* An argument printed before a launch that nothing has written yet (the wrapper says so, see
  :mod:`.wrapper`) is ``uninitialised``: its values are garbage, so no stats and never a finding.
* A launch *introduced* NaN or Inf when an argument holds some after it that held none before it
  (or was unwritten). A NaN that was already in an input only passes through later launches.
* The finding is the first launch that introduced a kind that matters (:func:`decide`): one that
  reaches an output, or one the eager run never makes (:mod:`.nonfinite`). A kind the eager run
  makes on purpose and no output holds (an attention mask's -inf) is a ``note``, not a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pt2kit.schema import KernelArg, Stats
from pt2kit.schema.records import num

from .printer import Arg, Launch, PrinterLog
from .provenance import for_launch
from .wrapper import PROXY_CALL, Wrapper, WrapperLaunch, save_id_of


@dataclass
class KernelFields:
    name: str
    launch: int
    when: str
    args: list[KernelArg] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    finding: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _kernel_arg(a: Arg, uninitialised: bool) -> KernelArg:
    stats = None
    if not uninitialised and a.numel is not None:
        stats = Stats(numel=a.numel, mean=num(a.mean), min=num(a.min), max=num(a.max), nan=a.nan or 0, inf=a.inf or 0)
    return KernelArg(name=a.name, numel=a.numel, dtype=a.dtype, shape=a.shape, stride=a.stride, device=a.device,
                     stats=stats, uninitialised=uninitialised)


def _align(printed: list[Launch], wrapped: list[WrapperLaunch]) -> list[WrapperLaunch | None]:
    """The wrapper launch of each printed one: in order, by name (a filter prints a subsequence)."""
    out: list[WrapperLaunch | None] = []
    j = 0
    for la in printed:
        k = j
        while k < len(wrapped) and wrapped[k].kernel != la.kernel:
            k += 1
        if k < len(wrapped):
            out.append(wrapped[k])
            j = k + 1
        else:
            out.append(None)
    return out


def _fresh_by_order(log: PrinterLog) -> list[set[str]]:
    """Without the wrapper: a ``buf`` first seen before a launch has not been written by one."""
    seen: set[str] = set()
    out = []
    for la in log.launches:
        out.append({a.name for a in la.before if a.name.startswith("buf") and a.name not in seen})
        seen.update(a.name for a in la.after)
    return out


def _wanted(kernels: list[str] | None, name: str) -> bool:
    return not kernels or name.lower() in {k.strip().lower() for k in kernels}


def from_printer(log: PrinterLog, wrapper: Wrapper | None, prov: dict[str, Any],
                 saved: dict[str, Any] | None = None, kernels: list[str] | None = None) -> list[KernelFields]:
    """Fields of the `kernel` records, in launch order (``launch == -1``: the model's inputs)."""
    out: list[KernelFields] = []
    if log.inputs:
        out.append(KernelFields("aoti_model_inputs", -1, "before", [_kernel_arg(a, False) for a in log.inputs]))
    if log.saved:
        return out + _from_saved(log.saved, wrapper, prov, saved or {}, kernels)
    if wrapper is not None and wrapper.launches:
        fresh = [w.uninitialised() if w else set() for w in _align(log.launches, wrapper.launches)]
    else:
        fresh = _fresh_by_order(log)
    nth: dict[str, int] = {}
    for la, unwritten in zip(log.launches, fresh, strict=False):
        p = for_launch(prov, la.kernel, nth.get(la.kernel, 0)) or {}
        nth[la.kernel] = nth.get(la.kernel, 0) + 1
        if not _wanted(kernels, la.kernel):  # a package's filter is compiled in: this one is ours
            continue
        extra = {"nodes": p.get("nodes", []), "sources": p.get("sources", []), "code": p.get("code", [])}
        if la.started:
            out.append(KernelFields(la.kernel, la.launch, "before",
                                    [_kernel_arg(a, a.name in unwritten) for a in la.before], **extra))
        if la.finished:
            out.append(KernelFields(la.kernel, la.launch, "after", [_kernel_arg(a, False) for a in la.after], **extra))
    return out


def _from_saved(paths: list[str], wrapper: Wrapper | None, prov: dict[str, Any], saved: dict[str, Any],
                kernels: list[str] | None) -> list[KernelFields]:
    """Mode 1: one record per launch and side, its arguments pointing at the saved tensors."""
    out: list[KernelFields] = []
    launch = -1
    last: tuple[str, str] | None = None
    nth: dict[str, int] = {}
    for path in paths:
        sid = save_id_of(path)
        site = wrapper.saves.get(sid) if wrapper is not None and sid is not None else None
        if site is None:
            continue
        if last is None or last[0] != site.kernel or (site.when == "before" and last[1] == "after"):
            launch += 1
            nth[site.kernel] = nth.get(site.kernel, -1) + 1
        if last is None or (site.kernel, site.when) != last or out[-1].launch != launch:
            p = for_launch(prov, site.kernel, nth[site.kernel]) or {}
            out.append(KernelFields(site.kernel, launch, site.when, [], p.get("nodes", []), p.get("sources", []),
                                    p.get("code", [])))
        last = (site.kernel, site.when)
        info = saved.get(path) or {}
        arg = KernelArg(name=site.arg, uninitialised=site.uninitialised)
        if "numel" in info:
            from msgspec import convert

            arg = convert({**info, "name": site.arg, "uninitialised": site.uninitialised}, KernelArg)
            if site.uninitialised:
                arg.stats = None
        out[-1].args.append(arg)
    return [k for k in out if _wanted(kernels, k.name)]


def introduced(args: list[Any], before: dict[str, Any]) -> tuple[str | None, list[str]]:
    """("nan"/"inf"/"nan+inf", the arguments) when ``args`` hold NaN/Inf that ``before`` (same names,
    before the launch) did not; an unwritten argument held nothing. (None, []) otherwise."""
    new_nan: list[str] = []
    new_inf: list[str] = []
    for a in args:
        if a.stats is None:
            continue
        prior = before.get(a.name)
        had = prior.stats if prior is not None and not prior.uninitialised else None
        if a.stats.nan and not (had and had.nan):
            new_nan.append(a.name)
        if a.stats.inf and not (had and had.inf):
            new_inf.append(a.name)
    if not (new_nan or new_inf):
        return None, []
    kind = "nan+inf" if new_nan and new_inf else "nan" if new_nan else "inf"
    return kind, list(dict.fromkeys(new_nan + new_inf))


def _kinds(kind: str | None) -> set[str]:
    return set(kind.split("+")) if kind else set()


def introductions(records: list[Any]) -> list[tuple[int, str]]:
    """(index in ``records``, kind) of every launch that introduced NaN or Inf.

    The model's inputs (launch -1) come first: NaN there is the caller's, and is said as such."""
    before: dict[int, dict[str, Any]] = {}
    out = []
    for i, rec in enumerate(records):
        if rec.when == "before" and rec.launch >= 0:
            before[rec.launch] = {a.name: a for a in rec.args}
            continue
        kind, _ = introduced(rec.args, before.get(rec.launch, {}))
        if kind is not None:
            out.append((i, kind))
    return out


MASK_NOTE = ("{what} that the eager run makes too and no output holds (an additive attention mask, say): "
             "information, not a finding")


def decide(records: list[Any], outputs: list[str] | None, eager: list[str] | None) -> tuple[int | None, str | None,
                                                                                           dict[int, str]]:
    """(index of the finding, its kind, {index: note}) over the records of one run.

    ``outputs``: non-finite kinds in the compiled outputs; ``eager``: kinds the eager run makes. Where
    either is unknown (a crash, a package run without its model) every kind matters."""
    matters = {"nan", "inf"}
    if outputs is not None and eager is not None:
        matters = set(outputs) | (matters - set(eager))
    found: tuple[int | None, str | None] = (None, None)
    notes: dict[int, str] = {}
    noted: set[str] = set()
    for i, kind in introductions(records):
        k = _kinds(kind)
        hit = k & matters
        if hit and found[0] is None:
            found = (i, "nan+inf" if hit == {"nan", "inf"} else hit.pop())
        quiet = k - matters - noted
        if quiet:
            noted |= quiet
            notes[i] = MASK_NOTE.format(what=" and ".join({"nan": "NaN", "inf": "Inf"}[x] for x in sorted(quiet)))
    return found[0], found[1], notes


def decided(records: list[Any], value: Any) -> list[Any]:
    """``records`` (fields or `kernel` records) with ``finding`` on the one launch :func:`decide` names,
    notes on the launches whose NaN/Inf is information only, and no candidate left elsewhere.
    ``value``: the worker's :class:`.work.Result` (None after a crash: then every kind matters)."""
    outputs, eager = (None, None) if value is None else (value.outputs_nonfinite, value.eager_nonfinite)
    i, kind, notes = decide(records, outputs, eager)
    for j, r in enumerate(records):
        r.finding = kind if j == i else None
        if j in notes:
            r.note = notes[j]
    return records


def last_kernel(log: PrinterLog | None, records: list[Any], wrapper: Wrapper | None = None,
                targets: list[str] | None = None) -> str | None:
    """The launch the printer's output stops inside; else the extern call(s) the wrapper makes, unprinted,
    right after the last launch it shows (``targets``: the proxy executor's ops, see
    :func:`.wrapper.read_extern_targets`); else that launch (AOTI); else the last record."""
    if log is not None:
        la = log.last_started
        if la is not None:
            return la.kernel
        after = _externs_after(log, wrapper, targets or [])
        if after:
            return after
        if log.launches:
            return log.launches[-1].kernel
    return records[-1].name if records else None


def _externs_after(log: PrinterLog, wrapper: Wrapper | None, targets: list[str]) -> str | None:
    """The unprinted extern calls between the last printed launch and the next, when the wrapper's
    printed launches line up with the output's (a package built with a kernel filter may not)."""
    if wrapper is None:
        return None
    k = len(log.launches)
    if k > len(wrapper.launches) or (k and wrapper.launches[k - 1].kernel != log.launches[-1].kernel):
        return None
    names = []
    for call in wrapper.externs:
        if call.after == k:
            op = targets[call.node] if call.node is not None and call.node < len(targets) else ""
            names.append(f"{PROXY_CALL}({op or f'extern node {call.node}'})" if call.name == PROXY_CALL
                         else call.name)
    return " or ".join(names) or None
