"""The search, parent side and torch-free: which candidates to ask the workers about, in what order.

"Still fails" is decided once, up front (the failure's kind and signature), and every candidate is
judged by it: a candidate that fails differently does not count. Every answer is cached by the
candidate's hash (its source, input specs and config). Strategies, in order:

1. accuracy: kdiff's localisation first (one compile with every node an output names the first
   diverging node whose divergence alone reaches a failing output of the graph), then the smallest
   window ending there that still fails;
2. a compile error, crash or NaN: the first node of each kind of op alone (a lowering or codegen bug
   is most often one op's), side by side; past 24 kinds, all of them in one small graph first, then
   halves of it, down to single nodes; then, or otherwise, truncate the suffix (the shortest prefix
   that fails), then cut the prefix (the latest start that fails, earlier values fed in as inputs);
3. delta debugging over the nodes left (remove blocks, halving the block size, until no single node
   can go); where several are left, each alone and each shorter suffix again with the inputs the cut makes
   laid out otherwise (column-major, last two dimensions swapped: ``relaid``), since the compiler may have
   laid out the value a cut replaces otherwise than traced, and every cut fed the traced layout passes;
4. where the failure needed the real values of small inputs (seeded ones did not show it), seed each
   input whose real values it does not need;
5. shrink input shapes (a size to 1, else to half, everywhere it appears; not while real values are
   fed), float constants (to one significant digit), dtypes, then drop every config setting the
   failure does not need (steps 4 and 5: :mod:`.shrink`).

Several candidates go to the workers at once (``jobs`` of them in parallel): k-ary instead of binary
search, blocks tried side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pt2kit_portable import same_death

from .. import ir
from ..ir import Config
from . import shrink


class Cancelled(Exception):
    """The search was stopped from outside (a search run ahead whose bet proved wrong)."""


class Searcher:
    def __init__(self, pool: Any, graph: ir.Graph, failure: dict[str, Any], backend: str, config: Config, *,
                 jobs: int, on_step: Callable[[str], None], seed: int = 0) -> None:
        self.pool = pool
        self.graph = graph
        self.failure = failure
        self.backend = backend
        self.config = config
        self.jobs = max(1, jobs)
        self.on_step = on_step
        self.seed = seed
        self.cache: dict[str, bool] = {}
        self.seconds: dict[str, float] = {}  # how long each answered query took its worker
        self.timed_out: dict[str, float | None] = {}  # queries stopped (the timeout ``fails`` was given): when
        self.queries = 0
        self.seen: dict[str, str] = {}  # signatures seen that were not the failure's, for the message
        self.stop: Any = None  # a threading.Event: once set, the next question raises Cancelled
        self.exact: bool | set[str] = False  # which inputs get their real values (``ir.build``'s exact)
        self.consts: dict[str, str] = {}  # float literals made simpler (``ir.build``'s consts)
        self.retype: dict[str, str] = {}  # input dtypes made float32 (``ir.build``'s retype)
        self.needs: str | None = None  # "the failure needs A and B together; ...", where it does (``together``)
        self.layout: str | None = None  # how a cut's inputs are laid out, where the traced layout lost it (``relaid``)

    _localized: tuple[set[str], ir.Candidate] | None = None
    _localize_tried = False

    def localize_first(self) -> bool:
        """Accuracy: localise on the whole graph; True when a window ending at the first diverging node
        fails (so the graph reproduces the failure, and the search starts from that window)."""
        self._localize_tried = True
        self._localized = self.localized([n.name for n in self.graph.compute])
        return self._localized is not None

    def localizes(self) -> bool:
        """``localize_first``'s answer, asked once (the search ahead may have asked already)."""
        return self._localized is not None if self._localize_tried else self.localize_first()

    def build(self, keep: set[str], **kw: Any) -> ir.Candidate | None:
        """``ir.build`` with the search's real values and constants, unless ``kw`` names others."""
        return ir.build(self.graph, keep, **{"exact": self.exact, "consts": self.consts, "relayout": self.layout, **kw})

    def whole(self) -> ir.Candidate | None:
        """The whole graph as a candidate (None where some node cannot be written standalone)."""
        return self.build({n.name for n in self.graph.compute})

    def with_real_values(self) -> ir.Candidate | None:
        """The whole graph with every small input fed its real values (seeded ones did not show the
        failure); later candidates keep them, until ``drop_real_values`` finds which are needed."""
        self.exact = True
        whole = self.whole()
        if whole is None or not whole.exact():
            self.exact = False
            return None
        self._localize_tried = False  # other inputs: localise again
        return whole

    # -- asking --------------------------------------------------------------------------------
    def payload(self, c: ir.Candidate, config: Config | None = None) -> dict[str, Any]:
        return {"source": c.source, "inputs": [s.as_tuple() for s in c.inputs], "failure": self.failure,
                "backend": self.backend, "config": self.config if config is None else config,
                "dynamic": self.graph.dynamic, "seed": self.seed, "train": self.graph.phase == "joint",
                "grad": c.grad}

    def judge(self, answer: dict[str, Any]) -> bool:
        t = answer.get("t")
        if t == "done":
            r = answer["result"]
            if not r["fails"]:
                self.seen[r["signature"]] = r.get("detail", "")
            return bool(r["fails"])
        if t == "died":  # where eager must raise first (failure["eager"]), the worker said it did
            eager = next((m.get("raised") for m in answer.get("said", ()) if m.get("t") == "eager"), None)
            same = self.failure["kind"] == "crash" and same_death(self.failure["signature"], answer["signal"]) and \
                eager == self.failure.get("eager")
            if not same:
                self.seen[f"died with {answer['signal']}"] = answer.get("stderr", "")[-500:]
            return same
        if t == "timeout":
            self.seen["timeout"] = ""
        return False

    @staticmethod
    def _key(c: ir.Candidate, cfg: Config) -> str:
        return c.key + repr(sorted((m, sorted(s.items())) for m, s in cfg.items()))

    def _check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Cancelled

    def key(self, c: ir.Candidate, config: Config | None = None) -> str:
        return self._key(c, self.config if config is None else config)

    def fails(self, cands: list[ir.Candidate | None], configs: list[Config] | None = None,
              timeout: float | None = None, straggle: Callable[[float], float] | None = None) -> list[bool]:
        """Whether each candidate (under ``configs[i]``, else the search's config) fails as the failure
        did; a query past ``timeout`` seconds, or a straggler (the pool's ``map``), is stopped and does
        not (``timed_out`` names it)."""
        self._check_stop()
        keys = [None if c is None else self._key(c, configs[i] if configs else self.config)
                for i, c in enumerate(cands)]
        todo: dict[str, dict[str, Any]] = {}
        for i, (c, key) in enumerate(zip(cands, keys, strict=True)):
            if c is not None and key is not None and key not in self.cache and key not in todo:
                todo[key] = self.payload(c, configs[i] if configs else None)
        if todo:
            self.queries += len(todo)
            limits = {**({"timeout": timeout} if timeout else {}), **({"straggle": straggle} if straggle else {})}
            answers = self.pool.map("query", list(todo.values()), **limits)
            self._check_stop()  # a worker killed to stop us answered "died": not an answer to keep
            for key, a in zip(todo, answers, strict=True):
                self.cache[key] = self.judge(a)
                if a.get("t") == "done" and isinstance(a.get("s"), int | float):
                    self.seconds[key] = a["s"]
                elif a.get("t") == "timeout" and (timeout or straggle):
                    self.timed_out[key] = a.get("s")
        return [key is not None and self.cache[key] for key in keys]

    def step(self, what: str, nodes: int) -> None:
        self.on_step(f"{what}: {nodes} nodes left, {self.queries} queries")

    # -- strategies ----------------------------------------------------------------------------
    def window(self, names: list[str], i: int, j: int) -> ir.Candidate | None:
        return self.build(set(names[i:j + 1]))

    def first_true(self, lo: int, hi: int, pred: Callable[[list[int]], list[bool]]) -> int:
        """Smallest k in [lo, hi] with pred true, assuming pred(hi) and monotone; k-ary, ``jobs`` at once."""
        while lo < hi:
            span = hi - lo
            n = min(self.jobs, span)
            pts = sorted({lo + (span * (k + 1)) // (n + 1) for k in range(n)} - {hi}) or [lo]
            res = pred(pts)
            new_lo, new_hi = lo, hi
            for p, ok in zip(pts, res, strict=True):
                if ok:
                    new_hi = p
                    break
                new_lo = p + 1
            lo, hi = new_lo, new_hi
        return hi

    def minimize(self, start: ir.Candidate) -> tuple[ir.Candidate, set[str]]:
        names = [n.name for n in self.graph.compute]
        keep = set(names)
        best = start
        if self.failure["kind"] == "accuracy":
            got = self._localized if self._localize_tried else self.localized(names)
            if got is not None:
                keep, best = got
        elif self.failure["kind"] in ("compile-error", "crash", "nan", "missing-error"):
            got = self.each_op_alone(names)
            if got is not None:
                keep, best = got
        self.step("truncate", best.nodes)
        order = [n for n in names if n in keep]
        j = self.first_true(0, len(order) - 1, lambda pts: self.fails([self.window(order, 0, p) for p in pts]))
        self.step("cut", j + 1)
        i_rev = self.first_true(0, j, lambda pts: self.fails([self.window(order, j - p, j) for p in pts]))
        i = j - i_rev
        cand = self.window(order, i, j)
        if cand is not None and self.fails([cand])[0]:
            keep, best = set(order[i:j + 1]), cand
        keep, best = self.ddmin(keep, best)
        keep, best = self.relaid(keep, best)
        return best, keep

    def relaid(self, keep: set[str], best: ir.Candidate) -> tuple[set[str], ir.Candidate]:
        """Where no op delta debugging left can go, each of them alone, then each shorter suffix, with the
        inputs the cut makes laid out otherwise (:data:`.ir.LAYOUTS`): the compiler may have laid out the value
        the cut replaces (an intermediate) otherwise than its traced layout, and a failure that needs that
        layout is lost by every cut that feeds the traced one. The first layout for which the fewest nodes fail
        is kept for the rest of the search (delta debugging again from there); at most 2 x (2n - 2) queries."""
        order = [n for n in (x.name for x in self.graph.compute) if n in keep]
        if len(order) < 2:
            return keep, best
        tries = [{n} for n in order] + [set(order[i:]) for i in range(len(order) - 2, 0, -1)]
        traced = [getattr(self.build(k), "key", None) for k in tries]  # each cut as asked already, built once
        for how in ir.LAYOUTS:
            # only what the layout changes: a cut with no input to lay out otherwise was asked already
            cands = [c if c is not None and c.key != t else None
                     for t, c in zip(traced, (self.build(k, relayout=how) for k in tries), strict=True)]
            if not any(cands):
                continue
            self.step(f"cuts with their inputs laid out {how}", len(order))
            hit = self.first_failing(cands)
            if hit is not None:
                self.layout = how
                self.on_step(f"{len(tries[hit])} of {len(order)} nodes fail with the inputs the cut makes laid out {how} "
                             "(the traced layout passes): kept so")
                return self.ddmin(tries[hit], cands[hit])  # type: ignore[arg-type]
        return keep, best

    def together(self, keep: set[str], rename: dict[int, int], config: Config) -> None:
        """One line (and :attr:`needs`) where the failure needs the ops kept together: the repro less any one
        of them, as written (its sizes, constants, dtypes and config), passes. Delta debugging left no op that
        can go, but at the sizes before shrinking: asked again here where those changed (else cached)."""
        self.needs = None
        names = [n.name for n in self.graph.compute if n.name in keep]
        if len(names) < 2:
            return
        without = [self.build(keep - {n}, rename=rename or None, retype=self.retype or None) for n in names]
        if any(c is None for c in without) or any(self.fails(without, [config] * len(without))):
            return  # one cannot stand without it, or the failure does not need it: not said
        by = self.graph.by_name()
        ops = [by[n].op.removesuffix(".default") for n in names]
        labels = [f"{op} ({n})" if ops.count(op) > 1 else op for op, n in zip(ops, names, strict=True)]
        listed = f"{', '.join(labels[:-1])} and {labels[-1]}"
        self.needs = f"the failure needs {listed} together; " + (
            "each passes alone" if len(names) == 2 else "it passes without any one of them")
        self.on_step(self.needs)

    def search(self, whole: ir.Candidate) -> tuple[ir.Candidate, Config]:
        """Every strategy in turn, from the whole graph: the smallest candidate that fails, and the config
        it needs."""
        best, keep = self.minimize(whole)
        best = shrink.real_values(self, best)
        best, rename = shrink.shapes(self, keep, best)
        best = shrink.constants(self, keep, best, rename)
        best = shrink.dtypes(self, keep, best, rename)
        config = shrink.config(self, best)
        self.together(keep, rename, config)
        return best, config

    def localize_request(self, names: list[str]) -> dict[str, Any] | None:
        """The localising compile's payload: the candidate with every tensor node an output."""
        by = self.graph.by_name()
        # never a value no op computed (torch.empty's memory, an attention kernel's philox seed): the candidate
        # does not return it, and the names must say what it does return, in order
        tensors = [n for n in names if by[n].spec is not None and by[n].spec.kind in ir.TENSORS  # type: ignore[union-attr]
                   and not by[n].undefined]
        c = self.build(set(names), outputs=set(tensors))
        if c is None:
            return None
        # the graph's own outputs: the divergence kept is the first that reaches a failing one
        return {**self.payload(c), "names": [n for n in names if n in set(tensors)],
                "outputs": [n for n in tensors if by[n].output]}

    def localized(self, names: list[str]) -> tuple[set[str], ir.Candidate] | None:
        # a graph run as a training step is judged by its inputs' gradients: no node's value to localise
        request = self.localize_request(names) if self.graph.phase != "joint" else None
        if request is None:
            return None
        self.step("localize", len(names))
        self._check_stop()
        self.queries += 1
        a = self.pool.ask("localize", request)
        self._check_stop()
        node = a.get("result", {}).get("node") if a.get("t") == "done" else None
        if node is None:
            return None
        d = names.index(node)
        width = 1
        while width <= d + 1:
            widths = [w for w in (width * (2 ** k) for k in range(self.jobs)) if w <= d + 1] or [d + 1]
            cands = [self.build(set(names[d - w + 1:d + 1])) for w in widths]
            for w, c2, ok in zip(widths, cands, self.fails(cands), strict=True):
                if ok and c2 is not None:
                    return set(names[d - w + 1:d + 1]), c2
            width = widths[-1] * 2
        return None

    def each_op_alone(self, names: list[str], most: int = 24) -> tuple[set[str], ir.Candidate] | None:
        """The first node, in graph order, that fails alone among the first of each kind of op (a
        lowering or codegen bug is most often one op's, whatever surrounds it). Up to ``most`` kinds:
        each alone, side by side (a tiny compile each). More (a real model's forward graph): all of
        them together first (one small graph of unconnected ops, each fed its inputs: one compile says
        whether any fails), then halved (``jobs`` parts asked at a time), keeping the first part that
        fails, until ``jobs`` are left to try alone; a whole that fails with no part asked failing
        goes on with the part not asked. None where no op fails alone (the failure needs its
        neighbours): the prefix search takes over."""
        by = self.graph.by_name()
        first: dict[str, str] = {}  # op -> its first node; insertion order is graph order
        for n in names:
            if by[n].op != "operator.getitem":
                first.setdefault(by[n].op, n)
        alone = {n: c for n in first.values() if (c := self.build({n})) is not None}  # one a repro cannot feed: not tried
        group = list(alone)
        if len(group) < 2:
            return None
        self.step("each op alone", len(names))
        if len(group) > most:
            if not self.fails([self.build(set(group))])[0]:
                return None
            group = self.halve(group)
        for n, ok in zip(group, self.fails([alone[n] for n in group]), strict=True):
            if ok:
                return {n}, alone[n]
        return None

    def halve(self, group: list[str]) -> list[str]:
        """Of nodes that fail together, at most ``jobs`` of them that still do (they are not asked
        again: the caller asks them alone)."""
        while len(group) > self.jobs:
            k = max(2, min(self.jobs + 1, len(group)))  # the last part is not asked: the others' failing says
            size = -(-len(group) // k)
            parts = [group[i:i + size] for i in range(0, len(group), size)]
            hit = self.first_failing([self.build(set(p)) for p in parts[:-1]])
            group = parts[hit] if hit is not None else parts[-1]
        return group

    def first_failing(self, cands: list[ir.Candidate | None]) -> int | None:
        """The index of the first candidate that fails, asking ``jobs`` at a time (none past it)."""
        for b in range(0, len(cands), self.jobs):
            for i, ok in enumerate(self.fails(cands[b:b + self.jobs])):  # None never fails
                if ok:
                    return b + i
        return None

    def ddmin(self, keep: set[str], best: ir.Candidate) -> tuple[set[str], ir.Candidate]:
        names = [n.name for n in self.graph.compute]
        n = 2
        while True:
            order = [x for x in names if x in keep]
            if len(order) <= 1:
                return keep, best
            n = min(n, len(order))
            size = -(-len(order) // n)
            blocks = [order[k:k + size] for k in range(0, len(order), size)]
            self.step("delta debugging", len(order))
            done = False
            for b in range(0, len(blocks), self.jobs):
                batch = blocks[b:b + self.jobs]
                cands = [self.build(keep - set(blk)) for blk in batch]
                for blk, c, ok in zip(batch, cands, self.fails(cands), strict=True):
                    if ok and c is not None:
                        keep, best, done = keep - set(blk), c, True
                        break
                if done:
                    break
            if done:
                n = max(n - 1, 2)
            elif n >= len(order):
                return keep, best
            else:
                n = min(2 * n, len(order))
