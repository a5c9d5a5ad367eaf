"""``reportgen --compare BEFORE AFTER``: what changed between two runs of the same sweep or checks.

Guarantees:

* Records are matched by what stays the same across torch versions and configs: a benchmark by
  (model, backend, mode, dtype, device); a finding by (model, constraint, op, dtype, user line); a
  diff by (model, output, tested backend); a graph break by (model, torch's break id or reason,
  user line); an unexpected recompile by (model, function, guard); a crash by (model, backend,
  stage); a NaN/Inf kernel finding by (model, kernel). Node and buffer names are never part of a key.
* A benchmark is *slower* only when the two speedup intervals (eager against the backend, each
  run's own bootstrap 95% interval) do not overlap and AFTER's lies below, *faster* when it lies
  above; anything else is within noise. Speedups, not raw latencies, are compared: each is measured
  against eager in its own run, so a machine that is slower that day moves neither.
* A regression is: a slower benchmark, an accuracy status that leaves ``pass``, a diff that starts
  failing, and any new finding, break, unexpected recompile, crash or NaN/Inf kernel. The command
  exits 1 when there is one, so it can gate CI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pt2kit.runtime.common.text import printable

from .collection import Collection, speedup_text
from .markdown import text as md_text


@dataclass
class Change:
    section: str
    key: str
    before: str
    after: str
    verdict: str  # regression | improvement | unchanged | new | vanished
    note: str = ""


@dataclass
class Comparison:
    before: str
    after: str
    changes: list[Change] = field(default_factory=list)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == "regression"]

    def of(self, section: str) -> list[Change]:
        return [c for c in self.changes if c.section == section]


def _ci(b: Any) -> str:
    if b is None:
        return "-"
    if b.accuracy == "fail_to_run":
        return "fail_to_run"
    return speedup_text(b)


def _times(more: float | None, less: float | None) -> str:
    """`` 1.25x`` where both speedups are positive (a speedup of 0, a run that never finished, has
    no ratio), else nothing."""
    return f" {more / less:.2f}x" if more is not None and less is not None and more > 0 and less > 0 else ""


def _benches(cmp: Comparison, before: Collection, after: Collection) -> None:
    def key(b: Any) -> str:
        extra = "".join(f", {x}" for x in (b.mode if b.mode not in (None, "infer") else None, b.dtype) if x)
        return f"{b.model} × {b.backend} ({b.device or 'cpu'}{extra})"

    old = {key(b): b for b in before.of("bench")}
    new = {key(b): b for b in after.of("bench")}
    for k in list(old) + [k for k in new if k not in old]:
        b, a = old.get(k), new.get(k)
        if a is None or b is None:
            cmp.changes.append(Change("benchmarks", k, _ci(b), _ci(a), "vanished" if a is None else "new"))
            continue
        verdict, note = "unchanged", "within the intervals"
        if None not in (a.speedup_lo, a.speedup_hi, b.speedup_lo, b.speedup_hi):  # half an interval says nothing
            if a.speedup_hi < b.speedup_lo:
                verdict, note = "regression", f"slower:{_times(b.speedup, a.speedup)} less speedup"
            elif a.speedup_lo > b.speedup_hi:
                verdict, note = "improvement", f"faster:{_times(a.speedup, b.speedup)} more speedup"
        if b.compile_s and a.compile_s:
            note += f"; cold compile {b.compile_s:.1f} s -> {a.compile_s:.1f} s"
        cmp.changes.append(Change("benchmarks", k, _ci(b), _ci(a), verdict, note))
        was, now = b.accuracy or "-", a.accuracy or "-"
        if was != now:
            worse = was == "pass" and now in ("fail_accuracy", "fail_to_run")
            cmp.changes.append(Change("accuracy", k, was, now, "regression" if worse else
                                      "improvement" if now == "pass" else "unchanged",
                                      a.accuracy_note or a.error or ""))


def _sets(cmp: Comparison, section: str, before: list[Any], after: list[Any], key: Callable[[Any], str | None],
          show: Callable[[Any], str]) -> None:
    """New entries are regressions, vanished ones improvements."""
    old = {k: r for r in before if (k := key(r)) is not None}
    new = {k: r for r in after if (k := key(r)) is not None}
    for k, r in new.items():
        if k not in old:
            cmp.changes.append(Change(section, k, "-", show(r), "regression", "new"))
    for k, r in old.items():
        if k not in new:
            cmp.changes.append(Change(section, k, show(r), "-", "improvement", "gone"))


def _diffs(cmp: Comparison, before: Collection, after: Collection) -> None:
    def key(d: Any) -> str:
        return f"{d.model} {d.output} ({d.test} vs {d.ref})"

    old = {key(d): d for d in before.of("diff")}
    for d in after.of("diff"):
        b = old.get(key(d))
        if b is None or b.passed == d.passed:
            continue
        cmp.changes.append(Change("diffs", key(d), "pass" if b.passed else "fail", "pass" if d.passed else "fail",
                                  "improvement" if d.passed else "regression", d.note or ""))


def compare(before: Collection, after: Collection, names: tuple[str, str]) -> Comparison:
    cmp = Comparison(*names)
    _benches(cmp, before, after)
    _diffs(cmp, before, after)
    _sets(cmp, "findings", before.of("violation"), after.of("violation"),
          lambda v: f"{v.model}: {v.constraint} {v.op or '(input)'} {v.dtype or ''} at {v.source or '?'}",
          lambda v: v.message)
    _sets(cmp, "graph breaks", before.of("graph_break"), after.of("graph_break"),
          lambda g: f"{g.model}: {g.gb_id or g.reason} at {g.source or '?'}", lambda g: g.reason)
    _sets(cmp, "recompiles", before.of("recompile"), after.of("recompile"),
          lambda r: None if r.expected else f"{r.model}: {r.function or r.frame} guard {r.guard or r.reason}",
          lambda r: r.reason)
    _sets(cmp, "crashes", before.of("crash"), after.of("crash"),
          lambda c: f"{c.model} × {c.backend or '-'} during {c.stage}",
          lambda c: c.signal or c.exception or c.message or "crash")
    _sets(cmp, "NaN/Inf kernels", before.of("kernel"), after.of("kernel"),
          lambda k: f"{k.model}: {k.name}" if k.finding else None, lambda k: k.finding or "")
    return cmp


SECTIONS = ("benchmarks", "accuracy", "diffs", "findings", "graph breaks", "recompiles", "crashes", "NaN/Inf kernels")


def to_text(cmp: Comparison, *, markdown: bool = False) -> str:
    n = len(cmp.regressions)
    lines = [f"{'# ' if markdown else ''}pt2kit comparison: {cmp.before} -> {cmp.after}", "",
             f"{n} regression(s), {sum(c.verdict == 'improvement' for c in cmp.changes)} improvement(s)", ""]
    for section in SECTIONS:
        rows = cmp.of(section)
        if not rows:
            continue
        lines.append(f"## {section}" if markdown else f"{section}:")
        if markdown:
            lines += ["", "| | what | before | after | note |", "|---|---|---|---|---|"]
        for c in rows:
            mark = {"regression": "REGRESSION", "improvement": "improved"}.get(c.verdict, c.verdict)
            if markdown:
                lines.append("| " + " | ".join(md_text(x) for x in (mark, c.key, c.before, c.after, c.note)) + " |")
            else:
                lines.append(f"  {mark:<11} {c.key}: {c.before} -> {c.after}" + (f"  ({c.note})" if c.note else ""))
        lines.append("")
    if not markdown:  # meant for a terminal: escape codes a stream carries are shown, never obeyed
        lines = [printable(line) for line in lines]
    return "\n".join(lines)


def to_json(cmp: Comparison) -> str:
    import msgspec

    # its first key is pt2kit's marker: a later `reportgen --compare -o` may replace the file (runtime.writes)
    doc = {"pt2kit_comparison": 1, "before": cmp.before, "after": cmp.after, "regressions": len(cmp.regressions),
           "changes": [c.__dict__ for c in cmp.changes]}
    return msgspec.json.format(msgspec.json.encode(doc).decode(), indent=1) + "\n"


def to_html(cmp: Comparison, title: str) -> str:
    from . import __version__
    from .html import CSP, _env

    return _env().get_template("compare.html.j2").render(cmp=cmp, sections=SECTIONS, title=title, csp=CSP,
                                                         version=__version__)


def to_format(cmp: Comparison, fmt: str, title: str) -> str:
    """The comparison as ``fmt`` says: html, json, md or text."""
    if fmt == "html":
        return to_html(cmp, title)
    if fmt == "json":
        return to_json(cmp)
    return to_text(cmp, markdown=fmt == "md")
