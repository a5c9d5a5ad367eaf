"""The search's last steps, on the smallest graph found: what PyTorch's minifier never shrinks (input
shapes, float constants, dtypes, the real values of small inputs), then the config settings the failure
does not need. Each keeps a change only where the candidate still fails the same way."""

from __future__ import annotations

from typing import Any, Protocol

from .. import ir
from ..ir import Config
from ..records import config_strings, dropped


class Searcher(Protocol):
    """What these steps use of :class:`.search.Searcher` (declared here, so that search imports shrink
    and never the other way round)."""

    graph: ir.Graph
    failure: dict[str, Any]
    config: Config
    exact: bool | set[str]
    consts: dict[str, str]
    retype: dict[str, str]

    def build(self, keep: set[str], **kw: Any) -> ir.Candidate | None: ...

    def fails(self, cands: list[ir.Candidate | None], configs: list[Config] | None = None,
              timeout: float | None = None, straggle: Any = None) -> list[bool]: ...

    def step(self, what: str, nodes: int) -> None: ...


def shapes(sr: Searcher, keep: set[str], best: ir.Candidate, budget: int = 12) -> tuple[ir.Candidate, dict[int, int]]:
    rename: dict[int, int] = {}
    if sr.failure["kind"] == "violation" and not sr.failure.get("align"):
        return best, rename  # an op's presence does not depend on sizes
    if best.exact():
        return best, rename  # real values have the real shapes
    spent = 0
    tile = sr.failure.get("align")

    def allowed(size: int, t: int) -> bool:
        # an alignment violation keeps its kind of size: a multiple of the tile stays one, a misaligned
        # size stays misaligned (and >= 2: size 1 is exempt), so no other dimension takes its place
        return not tile or ((size % tile == 0) == (t % tile == 0) and t >= 2)

    every = {d: 1 for d in ir.sizes(best)} if not tile else {}
    if every:  # all at once first: a bug that does not care about shapes takes one query
        one = sr.build(keep, rename=every)
        spent += 1
        sr.step("shrink every size to 1", best.nodes)
        if one is not None and sr.fails([one])[0]:
            return one, every
    for size in ir.sizes(best):
        target = size
        tries = [t for t in ([1, size // 2] if size // 2 > 1 else [1]) if allowed(size, t)]
        while tries and spent < budget:
            cands = [sr.build(keep, rename={**rename, size: t}) for t in tries]
            spent += len(cands)
            sr.step(f"shrink size {target}", best.nodes)
            res = sr.fails(cands)
            ok = [(t, c) for t, c, r in zip(tries, cands, res, strict=True) if r and c is not None]
            if not ok:
                break
            target, best = ok[0][0], ok[0][1]  # type: ignore[assignment]
            rename[size] = target
            tries = [target // 2] if target // 2 >= 1 and ok[0][0] != 1 and target // 2 != 1 else []
            tries = [t for t in tries if allowed(size, t)]
    return best, rename


def real_values(sr: Searcher, best: ir.Candidate) -> ir.Candidate:
    """Seeded values for every input whose real ones the failure does not need: all at once, else
    each alone (side by side), then those together."""
    held = sorted(best.exact())
    if not held:
        return best
    sr.step("seed the inputs whose real values it does not need", best.nodes)
    tries = [set(held)] + ([{n} for n in held] if len(held) > 1 else [])
    res = sr.fails([ir.seeded(best, t) for t in tries])
    drop = set(held) if res[0] else {n for t, ok in zip(tries[1:], res[1:], strict=True) if ok for n in t}
    if drop and not res[0] and len(drop) > 1 and not sr.fails([ir.seeded(best, drop)])[0]:
        drop = {min(drop)}  # each alone does, together they do not: keep one of them seeded
    best = ir.seeded(best, drop) if drop else best
    sr.exact = best.exact()
    return best


def constants(sr: Searcher, keep: set[str], best: ir.Candidate, rename: dict[int, int],
                     most: int = 8) -> ir.Candidate:
    """Every float literal to one significant digit (0.7071067811865476 -> 0.7): all at once (one
    query: a bug that does not care about them), else each alone (side by side, the first
    ``most``), then those that kept the failure together, dropping the last until it holds."""
    lits = ir.floats(sr.graph, keep)[:most]
    if not lits or sr.failure["kind"] == "violation":
        return best
    sr.step("simpler constants", best.nodes)

    def cand(some: list[str]) -> ir.Candidate | None:
        return sr.build(keep, rename=rename or None, consts=ir.simplified(some))

    good = lits if sr.fails([cand(lits)])[0] else []
    if not good and len(lits) > 1:
        good = [lit for lit, ok in zip(lits, sr.fails([cand([lit]) for lit in lits]), strict=True) if ok]
    while good:
        c = cand(good)
        if c is not None and sr.fails([c])[0]:
            sr.consts = ir.simplified(good)
            return c
        good.pop()
    return best


def dtypes(sr: Searcher, keep: set[str], best: ir.Candidate, rename: dict[int, int]) -> ir.Candidate:
    """Every float16, bfloat16 and float64 input as float32, in one query: a bug that is not about
    the dtype then has a repro that is not either."""
    odd = {s.dtype for s in best.inputs if s.kind == "tensor" and s.dtype in ("float16", "bfloat16", "float64")}
    if not odd or sr.failure["kind"] == "violation":
        return best
    retype = {d: "float32" for d in odd}
    cand = sr.build(keep, rename=rename or None, retype=retype)
    sr.step("inputs as float32", best.nodes)
    if cand is None or not sr.fails([cand])[0]:
        return best
    sr.retype = retype
    return cand


# a setting the failure does not need still stays where the repro would compile far slower without it
# (the tests' cpp.vec_isa_ok=False: vectorised C++ took 50 s a compile where the script's took 3): its
# query stops at SLOWER times the repro's own compile, and at least SLACK seconds more; or, sooner, at
# SLOWER times the slowest of the other settings' queries that ran beside it (the same load), and at least
# BESIDE seconds more (on a quiet 16-core machine, the AVX-512 compile this stopped at 20 s after the
# others had answered: 20 of aot_compile_error's 48 s in minify). A query that fails stops at the first
# error while one that passes compiles to the end, so BESIDE is wide: with 5 s, 4 workers on 2 loaded cores
# stopped aot_compile_error's (AVX2) vec_isa_ok drop at 7 s and kept it, where given 10 s it answered
# and the setting went, as with one worker
SLOWER, SLACK, BESIDE = 4.0, 20.0, 10.0


def _straggles(s: float) -> float:
    return max(s * SLOWER, s + BESIDE)


def config(sr: Searcher, best: ir.Candidate) -> Config:
    """The search's config less every setting the failure does not need, tried one at a time, then the
    droppable ones together; one whose drop makes the query run past :data:`SLOWER` times ``best``'s
    own (where that time is known), or the others' beside it, is kept, and said so."""
    items = [(m, k) for m, s in sr.config.items() for k in s]
    if not items:
        return sr.config

    def without(drop: set[tuple[str, str]]) -> Config:
        out: Config = {}
        for m, s in sr.config.items():
            kept = {k: v for k, v in s.items() if (m, k) not in drop}
            if kept:
                out[m] = kept
        return out

    sr.step("drop config", best.nodes)
    took = sr.seconds.get(sr.key(best))
    cap = max(took * SLOWER, took + SLACK) if took is not None else None
    singles = [without({it}) for it in items]
    res = sr.fails([best] * len(items), singles, timeout=cap,
                   straggle=_straggles if cap is not None and len(items) > 1 else None)
    beside = [sr.seconds[k] for k in (sr.key(best, cfg) for cfg in singles) if k in sr.seconds]
    for (m, k), cfg in zip(items, singles, strict=True):
        if sr.key(best, cfg) in sr.timed_out:
            (setting, value), = config_strings({m: {k: sr.config[m][k]}}).items()
            past = sr.timed_out[sr.key(best, cfg)] or cap
            others = f" and {max(beside):.1f}s at most without each other setting" if beside and past < cap else ""
            sr.on_step(f"drop config: kept {setting}={value}: the failure may not need it, but without it "
                       f"the repro's compile ran past {past:.0f}s, against {took:.1f}s with it{others}")
    droppable = {it for it, ok in zip(items, res, strict=True) if ok}
    if not droppable:
        return sr.config
    together = without(droppable)
    out = together if len(droppable) == 1 or sr.fails([best], [together], timeout=cap)[0] else \
        without({next(it for it in items if it in droppable)})
    # what the model ran under, which the repro's docstring names too
    sr.on_step(f"drop config: dropped {dropped(sr.config, out)} (the failure reproduces without them)")
    return out
