"""The non-HTML formats: `json` (one summary document), `md` (to paste into a GitHub issue),
`text` (a terminal summary). Plain string building: no plots, no templates.

Every field in `md` is written by :mod:`.markdown` (text, code spans, fences), so a record cannot format,
link or inject HTML into an issue; `text` shows
control characters as escapes (:func:`pt2kit.runtime.parent.session.printable`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from pt2kit.runtime.common.text import printable

from .collection import (
    Collection,
    by_constraint,
    captured_line,
    captured_models,
    counts,
    environment,
    fmt,
    group_violations,
    kernel_nonfinite,
    speedup_text,
)
from .failures import PROCESS
from .markdown import block, code, text

MAX_ROWS = 20


def _where(v: Any) -> str:
    return v.source or "-"


def _ms(lat: Any) -> str:
    return fmt(lat.median * 1e3) if lat is not None else "-"


def _compile(b: Any) -> str:
    cold = fmt(b.compile_s) if b.compile_s is not None else "-"
    return cold + (f" · {fmt(b.compile_warm.total_s)}" if b.compile_warm is not None else "")


def to_json(c: Collection) -> str:
    doc = {
        "pt2kit_report": 1,
        "counts": counts(c),
        "environment": environment(c),
        "runs": [{"run": r.run, "tool": r.tool, "records": r.records, "argv": r.header.argv if r.header else None}
                 for r in c.runs.values()],
        "captured": [{"model": m.model, **msgspec.to_builtins(m.captured)} for m in captured_models(c)],
        "violations_by_constraint": by_constraint(c),
        "violations": [{"model": m["model"], "groups": [
            {"constraint": g["constraint"], "op": g["op"], "count": len(g["findings"]),
             "sources": sorted({i.source for i in g["findings"] if i.source})} for g in m["groups"]]}
            for m in group_violations(c)],
        "failing_diffs": [msgspec.to_builtins(d) for d in c.of("diff") if not d.passed],
        "divergences": msgspec.to_builtins(c.of("divergence")),
        "graph_breaks": msgspec.to_builtins(c.of("graph_break")),
        "recompiles": msgspec.to_builtins(c.of("recompile")),
        "nonfinite_kernels": [{"launch": k.launch, "name": k.name} for k in c.of("kernel") if kernel_nonfinite(k)],
        "benchmarks": msgspec.to_builtins(c.of("bench")),
        "crashes": msgspec.to_builtins(c.of("crash")),
        "errors": msgspec.to_builtins(c.of("error")),
        "unknown_kinds": dict(sorted(c.unknown.items())),
    }
    return msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n"


def to_markdown(c: Collection) -> str:
    n = counts(c)
    env = environment(c)
    out = ["## pt2kit report", ""]
    out.append(f"{n['records']} records from {n['runs']} run(s): {text(', '.join(env['tools']) or '-')}; "
               f"torch {text(', '.join(env['torch']) or '-')}; device {text(', '.join(env['devices']) or '-')}")
    out.append("")
    out.append("| findings | failing diffs | graph breaks | recompiles | NaN/Inf kernels | crashes | errors |")
    out.append("|---|---|---|---|---|---|---|")
    out.append(f"| {n['findings']} | {n['failing_diffs']} | {n['breaks']} | {n['recompiles']} | "
               f"{n['nonfinite_kernels']} | {n['crashes']} | {n['errors']} |")
    captured = captured_models(c)
    if captured:
        out += ["", "### Graphs from the script (pt2kit capture)", ""]
        out += [f"- {text(m.model)}: {text(captured_line(m))}" for m in captured[:MAX_ROWS]]
    groups = [(m["model"], g) for m in group_violations(c) for g in m["groups"]]
    if groups:
        out += ["", "### Violations", "", "| model | constraint | op | count | first at |", "|---|---|---|---|---|"]
        for model, g in groups[:MAX_ROWS]:
            first = g["findings"][0]
            out.append(f"| {text(model)} | {text(g['constraint'])} | {code(g['op'], table=True)} | {len(g['findings'])} | "
                       f"{code(_where(first), table=True)} |")
        if len(groups) > MAX_ROWS:
            out.append(f"\n… and {len(groups) - MAX_ROWS} more groups")
    failing = [d for d in c.of("diff") if not d.passed]
    if failing:
        out += ["", "### Failing diffs", "", "| model | output | max abs | max rel | worst at | ref · test |",
                "|---|---|---|---|---|---|"]
        for d in failing[:MAX_ROWS]:
            m = d.metrics
            worst = "[" + ", ".join(map(str, d.worst_index)) + "]" if d.worst_index is not None else ""
            out.append(f"| {text(d.model or '')} | {code(d.output, table=True)} | {text(fmt(m.max_abs)) if m else ''} | "
                       f"{text(fmt(m.max_rel)) if m else ''} | {text(worst)} | "
                       f"{text(fmt(d.worst_ref))} · {text(fmt(d.worst_test))} |")
    for v in c.of("divergence"):
        out += ["", f"First divergence: {code(v.op or v.node)} at {code(v.source or v.node)}"]
    breaks = c.of("graph_break")
    if breaks:
        out += ["", "### Graph breaks", ""]
        out += [f"- {code(b.source or '?')}: {text(b.reason)}" for b in breaks[:MAX_ROWS]]
    benches = c.of("bench")
    if benches:
        out += ["", "### Benchmarks", "", "| model | backend | eager ms | compiled ms | speedup [95% CI] | "
                "compile s cold · warm | accuracy |", "|---|---|---|---|---|---|---|"]
        for b in benches[:MAX_ROWS]:
            out.append(f"| {text(b.model or '')} | {text(b.backend)} | {text(_ms(b.eager))} | {text(_ms(b.latency))} | "
                       f"{text(speedup_text(b))} | {text(_compile(b))} | {text(b.accuracy or '')} |")
    for cr in c.of("crash"):
        what = cr.signal or cr.exception or f"exit {cr.exitcode}"
        out += ["", f"### Crash: {text(cr.model or PROCESS)} ({text(what)} during {text(cr.stage)})", ""]
        if cr.message:
            out.append(text(cr.message))
        if cr.stderr_tail:
            out += ["", block("\n".join(cr.stderr_tail.splitlines()[-15:]))]
    for e in c.of("error"):
        out += ["", f"- error (exit {e.exit_code}): {text(e.message)}"]
    return "\n".join(out) + "\n"


def to_text(c: Collection) -> str:
    n = counts(c)
    env = environment(c)
    lines = [f"pt2kit report: {n['records']} records, {n['runs']} run(s) ({', '.join(env['tools']) or '-'}), "
             f"torch {', '.join(env['torch']) or '-'}, device {', '.join(env['devices']) or '-'}"]
    per = by_constraint(c)
    detail = f" ({', '.join(f'{k} {v}' for k, v in per.items())})" if per else ""
    lines.append(f"  findings: {n['findings']}{detail}")
    lines.append(f"  diffs: {n['diffs']} ({n['failing_diffs']} failing), divergences: {n['divergences']}")
    lines.append(f"  graph breaks: {n['breaks']}, recompiles: {n['recompiles']} (+{n['expected_recompiles']} expected), "
                 f"guards: {n['guards']}")
    lines.append(f"  kernels: {n['kernels']} ({n['nonfinite_kernels']} with NaN/Inf), benchmarks: {n['benches']}, "
                 f"repros: {n['repros']}")
    lines.append(f"  crashes: {n['crashes']}, errors: {n['errors']}")
    lines += [f"CAPTURED {m.model}: {captured_line(m)}" for m in captured_models(c)]
    for m in group_violations(c):
        lines.append(f"violations in {m['model']}:")
        for g in m["groups"]:
            first = g["findings"][0]
            module = f" [{first.module}]" if first.module else ""
            lines.append(f"  {g['constraint']:<11} {g['op']:<36} {len(g['findings']):>4}  {_where(first)}{module}")
    for d in (d for d in c.of("diff") if not d.passed):
        lines.append(f"FAIL {d.model or ''} {d.output}: max abs {fmt(d.metrics.max_abs) if d.metrics else '?'}"
                     f" at {d.worst_index}: ref {fmt(d.worst_ref)} test {fmt(d.worst_test)}")
    for b in c.of("bench"):
        lines.append(f"BENCH {b.model or ''} × {b.backend}: eager {_ms(b.eager)} ms, compiled {_ms(b.latency)} ms, "
                     f"speedup {speedup_text(b)}, compile {_compile(b)} s, accuracy {b.accuracy or '-'}"
                     + (f": {b.error}" if b.error else ""))
    for cr in c.of("crash"):
        lines.append(f"CRASH {cr.model or PROCESS}: {cr.signal or cr.exception or cr.exitcode} during {cr.stage}: "
                     f"{cr.message or ''}".rstrip())
    for e in c.of("error"):
        lines.append(f"ERROR (exit {e.exit_code}): {e.message}")
    if c.unknown:
        lines.append("unknown kinds: " + ", ".join(f"{k} ({v})" for k, v in sorted(c.unknown.items())))
    # meant for a terminal: escape codes a stream carries are shown, never obeyed
    return "\n".join(printable(line) for line in lines) + "\n"
