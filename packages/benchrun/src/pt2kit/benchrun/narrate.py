"""What benchrun says on stderr: a line per job as it ends, a table at the end. Built from records."""

from __future__ import annotations

from typing import Any

from pt2kit.runtime.text import summary_line


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.0f} MiB"


def speedup(b: dict[str, Any]) -> str:
    if b.get("speedup") is None:
        return "-"
    return f"{b['speedup']:.2f}x [{b['speedup_lo']:.2f}, {b['speedup_hi']:.2f}]"


def job_line(b: dict[str, Any]) -> str:
    """One line for a `bench` record."""
    head = f"{b['model']} × {b['backend']}"
    if b.get("error"):
        return f"{head}: FAIL TO RUN: {summary_line(b['error'])}"
    parts = []
    if b.get("latency") and b.get("eager"):
        parts.append(f"{speedup(b)} (eager {ms(b['eager']['median'])} -> {ms(b['latency']['median'])}, "
                     f"n={b['latency']['n']})")
    cold, warm = b.get("compile_cold"), b.get("compile_warm")
    if cold:
        parts.append(f"compile {cold['total_s']:.1f} s cold" + (f", {warm['total_s']:.1f} s warm" if warm else ""))
    mem = b.get("memory") or {}
    if mem.get("warm_allocated"):
        parts.append(f"peak {mib(mem['warm_allocated'])} warm, {mib(mem.get('cold_allocated'))} cold")
    if b.get("graphs") is not None:
        parts.append(f"{b['graphs']} graph(s), {b.get('breaks', 0)} break(s), {b.get('recompiles', 0)} recompile(s)")
    acc = b.get("accuracy")
    if acc:
        parts.append(f"accuracy {acc}" + (f" ({b['accuracy_note']})" if b.get("accuracy_note") else ""))
    return f"{head}: " + "; ".join(parts)


def crash_line(c: dict[str, Any]) -> str:
    what = c.get("message") or c.get("signal") or c.get("exception") or "crashed"
    if str(what).startswith("timed out"):
        return f"{c['model']} × {c['backend']}: TIMEOUT: {what}"
    return f"{c['model']} × {c['backend']}: CRASH during {c.get('stage')}: {summary_line(str(what))}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The sweep's summary, one line a job: model, backend, eager and compiled medians, speedup, accuracy."""
    out = [f"{'model':<28} {'backend':<22} {'eager':>10} {'compiled':>10} {'speedup [95% CI]':>24} {'compile':>9}"
           "  accuracy"]
    for r in rows:
        if r.get("kind") == "crash":
            out.append(f"{r['model'][:28]:<28} {r['backend'][:22]:<22} {'crash':>10}")
            continue
        cold = r.get("compile_cold") or {}
        out.append(f"{r['model'][:28]:<28} {r['backend'][:22]:<22} {ms((r.get('eager') or {}).get('median')):>10} "
                   f"{ms((r.get('latency') or {}).get('median')):>10} {speedup(r):>24} "
                   f"{(str(round(cold['total_s'], 1)) + ' s') if cold else '-':>9}  {r.get('accuracy') or '-'}")
    return out
