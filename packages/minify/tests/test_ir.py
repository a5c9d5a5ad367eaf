"""Candidates as source, torch-free: what a cut feeds in, what it returns, how shapes shrink; and
`minify --help` imports no torch."""

from __future__ import annotations

import subprocess
import sys

import msgspec
import torch

from pt2kit.minify import ir
from pt2kit.minify.parent import shrink
from pt2kit.minify.parent.search import Searcher


def _spec(*shape: int) -> ir.Spec:
    stride, acc = [], 1
    for d in reversed(shape):
        stride.insert(0, acc)
        acc *= d
    return ir.Spec("tensor", list(shape), stride, "float32", "cpu")


G = ir.Graph(index=0, nodes=[
    ir.Node(name="x", op="input", spec=_spec(8, 32)),
    ir.Node(name="ln", expr="torch.ops.aten.native_layer_norm.default(x, [32], None, None, 1e-05)", deps=["x"],
            op="aten.native_layer_norm.default", spec=None),
    ir.Node(name="getitem", expr="ln[0]", deps=["ln"], op="<built-in function getitem>", spec=_spec(8, 32)),
    ir.Node(name="relu", expr="torch.ops.aten.relu.default(getitem)", deps=["getitem"], op="aten.relu.default",
            spec=_spec(8, 32), place="m.py:19", code="x = torch.relu(x)"),
    ir.Node(name="view", expr="torch.ops.aten.view.default(relu, [8, 32, 1])", deps=["relu"], op="aten.view.default",
            spec=_spec(8, 32, 1), output=True),
])


def test_a_cut_feeds_the_dropped_value_in_and_returns_the_sinks():
    c = ir.build(G, {"relu"})
    assert c is not None and c.nodes == 1 and c.ops == ["aten.relu.default"]
    assert "def forward(self, getitem):" in c.source and "return (relu, )" in c.source
    assert "# m.py:19  x = torch.relu(x)" in c.source
    assert [s.shape for s in c.inputs] == [[8, 32]]


def test_a_tuple_cannot_be_fed_in():
    assert ir.build(G, {"getitem", "relu"}) is None  # it would need layer_norm's tuple as an input
    whole = ir.build(G, {"ln", "getitem", "relu", "view"})
    assert whole is not None and "def forward(self, x):" in whole.source and whole.nodes == 4


def test_shrinking_renames_a_size_in_shapes_and_literals_and_keys_differ():
    c = ir.build(G, {"relu", "view"}, rename={32: 1, 8: 4})
    assert c is not None and "[4, 1, 1]" in c.source and [s.shape for s in c.inputs] == [[4, 1]]
    assert c.key != ir.build(G, {"relu", "view"}).key and ir.sizes(ir.build(G, {"relu"})) == [32, 8]


R = ir.Graph(index=0, nodes=[
    ir.Node(name="a", op="input", spec=msgspec.structs.replace(_spec(2, 2), values=[0.5, "nan", "-inf", 2.0])),
    ir.Node(name="m", op="input", spec=ir.Spec("tensor", [2, 2], [2, 1], "bool", "cpu", values=[True, False, False, True])),
    ir.Node(name="w", op="input", spec=_spec(2, 2)),  # too large to keep its values (EXACT_MAX)
    ir.Node(name="out", expr="torch.where(m, a, w)", deps=["m", "a", "w"], op="torch.where", spec=_spec(2, 2),
            output=True),
])


def test_real_values_are_fed_only_where_asked_and_read_back_exactly():
    seeded, real, one = (ir.build(R, {"out"}, exact=e) for e in (False, True, {"m"}))
    assert seeded.exact() == set() and real.exact() == {"a", "m"} and one.exact() == {"m"}
    assert len({seeded.key, real.key, one.key}) == 3 and ir.seeded(real, {"a"}).key == one.key
    assert ir.build(R, {"out"}, exact=True, rename={2: 1}) is None  # real values keep their real shape
    from pt2kit.minify.judge.harness import make_inputs

    a, m, w = make_inputs([s.as_tuple() for s in real.inputs])
    assert a.dtype == torch.float32 and a.tolist()[0][0] == 0.5 and a[0, 1].isnan() and a[1, 0] == float("-inf")
    assert m.dtype == torch.bool and m.tolist() == [[True, False], [False, True]] and w.shape == (2, 2)


class _Pool:
    """Answers a query by which inputs carry their real values: it fails while ``needed`` do."""

    def __init__(self, needed: set[int]) -> None:
        self.needed, self.asked = needed, 0

    def map(self, kind: str, payloads: list[dict]) -> list[dict]:
        self.asked += len(payloads)
        return [{"t": "done", "result": {"fails": all(len(p["inputs"][i]) == 8 for i in self.needed),
                                         "signature": "x"}} for p in payloads]


def test_the_search_seeds_every_input_whose_real_values_the_failure_does_not_need():
    for needed, kept in (({0}, {"a"}), ({1}, {"m"}), (set(), set()), ({0, 1}, {"a", "m"})):
        pool = _Pool(needed)
        s = Searcher(pool, R, {"kind": "accuracy", "signature": "accuracy"}, "eager", {}, jobs=2, on_step=print)
        best = shrink.real_values(s, s.with_real_values())
        # all seeded, and each alone, side by side
        assert best.exact() == kept and s.exact == kept and pool.asked == 3, (needed, best.exact(), pool.asked)


C = ir.Graph(index=0, nodes=[
    ir.Node(name="x", op="input", spec=_spec(4)),
    ir.Node(name="mul", expr="torch.ops.aten.mul.Tensor(x, 0.7071067811865476)", deps=["x"], op="aten.mul.Tensor",
            spec=_spec(4)),
    ir.Node(name="add_1", expr="torch.ops.aten.add.Tensor(mul, 1e-05)", deps=["mul"], op="aten.add.Tensor",
            spec=_spec(4)),
    ir.Node(name="clamp", expr="torch.ops.aten.clamp.default(add_1, -3.4028234663852886e+38, 0.044715)",
            deps=["add_1"], op="aten.clamp.default", spec=_spec(4), output=True),
])


class _SourcePool(_Pool):
    """Fails while the source holds every one of ``needed``."""

    def map(self, kind: str, payloads: list[dict]) -> list[dict]:
        self.asked += len(payloads)
        return [{"t": "done", "result": {"fails": all(lit in p["source"] for lit in self.needed), "signature": "x"}}
                for p in payloads]


def test_float_constants_become_one_digit_unless_the_failure_needs_them():
    keep = {"mul", "add_1", "clamp"}
    assert ir.floats(C, keep) == ["0.7071067811865476", "-3.4028234663852886e+38", "0.044715"]  # 1e-05 is short
    for needed, asked in ((set(), 1), ({"0.044715"}, 5)):
        pool = _SourcePool(needed)  # type: ignore[arg-type]
        s = Searcher(pool, C, {"kind": "accuracy", "signature": "accuracy"}, "eager", {}, jobs=2, on_step=print)
        best = shrink.constants(s, keep, ir.build(C, keep), {})
        assert "torch.ops.aten.mul.Tensor(x, 0.7)" in best.source and "-3e+38, " in best.source, best.source
        assert ("0.044715)" if needed else "0.04)") in best.source and "1e-05" in best.source
        assert pool.asked == asked and "add_1" in best.source  # a name's digits are not a literal


def test_each_op_alone_tries_the_first_node_of_each_kind_and_keeps_graph_order():
    g = ir.Graph(index=0, nodes=[
        ir.Node(name="x", op="input", spec=_spec(4)),
        ir.Node(name="r1", expr="torch.ops.aten.relu.default(x)", deps=["x"], op="aten.relu.default", spec=_spec(4)),
        ir.Node(name="a1", expr="torch.ops.aten.add.Tensor(r1, 1)", deps=["r1"], op="aten.add.Tensor", spec=_spec(4)),
        ir.Node(name="r2", expr="torch.ops.aten.relu.default(a1)", deps=["a1"], op="aten.relu.default",
                spec=_spec(4), output=True),
    ])
    pool = _SourcePool(set())  # every candidate fails: the first in graph order is the answer
    s = Searcher(pool, g, {"kind": "compile-error", "signature": "E"}, "eager", {}, jobs=2, on_step=print)
    keep, best = s.each_op_alone(["r1", "a1", "r2"])
    assert keep == {"r1"} and best.ops == ["aten.relu.default"] and pool.asked == 2  # r2 is a relu again


def test_help_imports_no_torch():
    code = ("import sys\nfrom pt2kit.minify.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert not {'torch', 'matplotlib', 'triton', 'rich'} & set(sys.modules), sorted(sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--failure" in p.stdout and "Exit codes:" in p.stdout


KINDS = ["relu", "sigmoid", "tanh", "exp", "neg", "abs", "sin", "cos", "erf"]
CHAIN = ir.Graph(index=0, nodes=[ir.Node(name="x", op="input", spec=_spec(4))] + [
    ir.Node(name=f"{k}_{i}", expr=f"torch.ops.aten.{k}.default({'x' if i == 0 else f'{KINDS[i - 1]}_{i - 1}'})",
            deps=["x" if i == 0 else f"{KINDS[i - 1]}_{i - 1}"], op=f"aten.{k}.default", spec=_spec(4),
            output=i == len(KINDS) - 1) for i, k in enumerate(KINDS)])


def test_many_kinds_of_op_are_tried_together_then_halved_not_one_compile_each():
    # more kinds than ``most`` (a real model's forward graph has 30 and more)
    names = [n.name for n in CHAIN.compute]
    for jobs, failing, asked in ((1, {"aten.cos."}, 4), (2, {"aten.cos."}, 5), (1, {"aten.zeros"}, 1)):
        pool = _SourcePool(failing)  # type: ignore[arg-type]
        s = Searcher(pool, CHAIN, {"kind": "compile-error", "signature": "E"}, "eager", {}, jobs=jobs, on_step=print)
        got = s.each_op_alone(names, most=4)
        if "aten.zeros" in failing:  # no op fails: the one graph of all nine says so, and the prefix search follows
            assert got is None
        else:
            assert got is not None and got[0] == {"cos_7"} and got[1].ops == ["aten.cos.default"]
        assert pool.asked == asked, (jobs, pool.asked)  # nine kinds: one compile each was nine queries
    pool = _SourcePool(set())  # every op fails alone: the first in graph order is the answer
    s = Searcher(pool, CHAIN, {"kind": "compile-error", "signature": "E"}, "eager", {}, jobs=1, on_step=print)
    assert s.each_op_alone(names, most=4)[0] == {"relu_0"}


def test_a_call_no_file_can_write_is_left_out_and_its_value_fed_in():
    g = ir.Graph(index=0, level="dynamo", nodes=[
        ir.Node(name="w", op="input", spec=_spec(4)),
        ir.Node(name="set_", expr=ir.UNWRITABLE, deps=["w"], op="torch_Tensor_set_", spec=_spec(4)),  # Dynamo's own
        ir.Node(name="pair", expr=ir.UNWRITABLE, deps=["w"], op="f", spec=None),  # a tuple: cannot be fed
        ir.Node(name="p0", expr="pair[0]", deps=["pair"], op="operator.getitem", spec=_spec(4)),
        ir.Node(name="y", expr="torch.relu(set_)", deps=["set_"], op="torch.relu", spec=_spec(4)),
        ir.Node(name="z", expr="torch.relu(p0)", deps=["p0"], op="torch.relu", spec=_spec(4), output=True),
    ])
    assert [n.name for n in g.compute] == ["y", "z"] and [n.name for n in g.unwritable] == ["set_", "pair"]
    s = Searcher(_Pool(set()), g, {"kind": "accuracy", "signature": "accuracy"}, "eager", {}, jobs=1, on_step=print)
    whole = s.whole()
    assert whole is not None and ir.UNWRITABLE not in whole.source and whole.names == ["set_", "p0"]


class _TimedPool:
    """Every query fails as asked; one took ``took`` s with the whole config, and one without ``slow`` would
    run past any timeout (as vectorised C++ ran 50 s a compile where the script's own settings ran 3)."""

    def __init__(self, slow: str, beside: bool = False) -> None:
        self.slow, self.timeouts, self.beside = slow, [], beside  # beside: stopped as the pool stops a straggler

    def map(self, kind: str, payloads: list[dict], timeout: float | None = None, straggle=None) -> list[dict]:
        self.timeouts.append(timeout)
        stop = {"t": "timeout", "s": straggle(3.0)} if self.beside and straggle else {"t": "timeout"}
        return [stop if timeout and self.slow not in p["config"]["torch._inductor.config"]
                else {"t": "done", "result": {"fails": True, "signature": "E"}, "s": 3.0} for p in payloads]


def test_a_setting_whose_drop_makes_the_repro_compile_far_slower_is_kept_and_said():
    g = ir.Graph(index=0, nodes=[ir.Node(name="x", op="input", spec=_spec(4)),
                                 ir.Node(name="r", expr="torch.ops.aten.relu.default(x)", deps=["x"],
                                         op="aten.relu.default", spec=_spec(4), output=True)])
    cfg = {"torch._inductor.config": {"cpp.vec_isa_ok": "False", "pattern_matcher": "False"}}
    said: list[str] = []
    pool = _TimedPool(slow="cpp.vec_isa_ok")
    s = Searcher(pool, g, {"kind": "compile-error", "signature": "E"}, "inductor", cfg, jobs=2, on_step=said.append)
    best = s.whole()
    assert s.fails([best]) == [True] and pool.timeouts == [None]  # the search's own queries: the pool's limit
    assert shrink.config(s, best) == {"torch._inductor.config": {"cpp.vec_isa_ok": "False"}}
    assert pool.timeouts[1:] == [23.0]  # both singles side by side; 3 s with it: at most 4x, and 20 s more
    assert ("drop config: kept cpp.vec_isa_ok=False: the failure may not need it, but without it the "
            "repro's compile ran past 23s, against 3.0s with it") in said, said
    # the others' queries beside it answered in 3 s: stopped at 4x that and 10 s more, not at 23 s
    said.clear()
    s3 = Searcher(_TimedPool(slow="cpp.vec_isa_ok", beside=True), g, {"kind": "compile-error", "signature": "E"},
                  "inductor", cfg, jobs=2, on_step=said.append)
    assert s3.fails([s3.whole()]) == [True]
    assert shrink.config(s3, s3.whole()) == {"torch._inductor.config": {"cpp.vec_isa_ok": "False"}}
    assert ("drop config: kept cpp.vec_isa_ok=False: the failure may not need it, but without it the repro's "
            "compile ran past 13s, against 3.0s with it and 3.0s at most without each other setting") in said, said
    # unknown time (the answer came from elsewhere): no limit, the setting the failure does not need goes
    s2 = Searcher(_TimedPool(slow="cpp.vec_isa_ok"), g, {"kind": "compile-error", "signature": "E"}, "inductor",
                  cfg, jobs=2, on_step=said.append)
    assert shrink.config(s2, s2.whole()) == {}
    # what the model ran under that the repro no longer sets: said (the repro's docstring says it too)
    assert said[-1] == "drop config: dropped cpp.vec_isa_ok=False, pattern_matcher=False (the failure reproduces " \
                       "without them)", said


FOUR = ir.Graph(index=0, nodes=[ir.Node(name="x", op="input", spec=_spec(4))] + [
    ir.Node(name=n, expr=f"torch.ops.{op}(x)", deps=["x"], op=op, spec=_spec(4), output=True)
    for n, op in (("relu", "aten.relu.default"), ("neg", "aten.neg.default"), ("mul", "aten.mul.Tensor"),
                  ("exp", "aten.exp.default"))])


def test_a_failure_no_op_shows_alone_is_kept_as_the_ops_it_needs_and_said_once():
    for needed, said in (({"aten.relu", "aten.mul"}, "the failure needs aten.relu and aten.mul.Tensor together; "
                                                     "each passes alone"),
                         ({"aten.relu", "aten.neg", "aten.exp"}, "the failure needs aten.relu, aten.neg and aten.exp "
                                                                 "together; it passes without any one of them"),
                         ({"aten.neg"}, None)):  # one op alone fails: nothing to say
        lines: list[str] = []
        s = Searcher(_SourcePool(needed), FOUR, {"kind": "compile-error", "signature": "E"}, "eager", {}, jobs=2,  # type: ignore[arg-type]
                     on_step=lines.append)
        best, _ = s.search(s.whole())
        assert {op.rsplit(".", 1)[0] for op in best.ops} == needed, best.ops
        assert [ln for ln in lines if ln.startswith("the failure needs")] == ([said] if said else []) and s.needs == said


def test_memory_no_op_defined_is_never_a_candidates_output():
    """torch.empty's values, and what is computed from them, differ between any two runs: a candidate returning
    them "fails" on a correct compile, and the search would cut the graph to that op (issue 57: the script of
    pytorch#184405 returns torch.empty(2)). A torch.empty filled whole is defined, and returned."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from pt2kit.minify.worker.toir import to_ir

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x.relu(), torch.empty_like(x) + 1, torch.empty(3).fill_(2.0)

    x = torch.randn(4)
    g = to_ir(make_fx(f)(x), [x], 0, "cpu")
    name = {n.op: n.name for n in g.nodes}
    assert {n.op for n in g.nodes if n.undefined} == {"aten.empty_like.default", "aten.add.Tensor",
                                                      "aten.empty.memory_format"}
    assert ir.build(g, {name["aten.empty_like.default"]}) is None
    assert ir.build(g, {name["aten.empty_like.default"], name["aten.add.Tensor"]}) is None
    whole = ir.build(g, {n.name for n in g.compute})
    assert whole is not None and f"return ({name['aten.relu.default']}, {name['aten.fill_.Scalar']}, )" in whole.source


def test_an_ops_random_generator_state_is_never_returned_nor_named_by_the_localising_compile():
    """An output the op's schema names philox_seed/philox_offset is RNG state (issue 59): no candidate returns it,
    what reads it is judged as usual, and the localising compile's names are what its candidate returns, in order
    (they were every tensor node, so each value after the seed was judged under its neighbour's name)."""
    import runpy

    from mntest import MODELS
    from torch.fx.experimental.proxy_tensor import make_fx

    from pt2kit.minify.worker.toir import to_ir
    from pt2kit_portable import undefined_values

    runpy.run_path(str(MODELS / "rng_state_attention.py"))  # its op, defined once

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, _seed, offset = torch.ops.pt2kit_rng.attention(x)
        return a.relu(), offset + 1

    x = torch.randn(4, 8)
    g = to_ir(make_fx(f)(x), [x], 0, "cpu")
    assert [n.expr for n in g.nodes if n.undefined] == ["attention[1]", "attention[2]"]
    assert not next(n for n in g.nodes if n.op == "aten.add.Tensor").undefined  # it reads the state: a value
    names = [n.name for n in g.compute]
    request = Searcher(None, g, {"kind": "accuracy", "signature": "accuracy"}, "eager", {}, jobs=1,
                       on_step=print).localize_request(names)
    assert request is not None and request["names"] == ["getitem", "relu", "add"], request["names"]
    assert "return (getitem, relu, add, )" in request["source"]
    with undefined_values() as seen:  # the rule at run time (minify's original run, kdiff's leaves): the same
        a, seed, offset = torch.ops.pt2kit_rng.attention(x)
        moved = offset + 1
    assert [seen.made_by(t) for t in (a, seed, offset, moved)] == [
        None, "pt2kit_rng.attention.default's philox_seed", "pt2kit_rng.attention.default's philox_offset", None]


def test_a_dynamo_graphs_getitem_that_indexes_a_tensor_is_no_generator_state():
    """A Dynamo-level graph indexes tensors with getitem (``x[:, 0]``: a tuple holding slices, which Python 3.11
    cannot hash): the rule for RNG-state outputs reads int positions only. Asking it of such a getitem raised
    TypeError, and minify said every backend's failure on a transformer happened before any graph reached it."""
    from pt2kit_portable import undefined_nodes

    def f(x: torch.Tensor) -> torch.Tensor:
        return x[:, 0] + x[0]

    assert undefined_nodes(torch.fx.symbolic_trace(f).graph) == {}


PADDED = ir.Graph(index=0, nodes=[
    ir.Node(name="x", op="input", spec=_spec(2, 2)),
    ir.Node(name="pad", expr="torch.ops.aten.constant_pad_nd.default(x, [0, 4], 0.0)", deps=["x"],
            op="aten.constant_pad_nd.default", spec=_spec(2, 6)),
    ir.Node(name="mul", expr="torch.ops.aten.mul.Tensor(pad, 2)", deps=["pad"], op="aten.mul.Tensor", spec=_spec(2, 6)),
    ir.Node(name="fft", expr="torch.ops.aten._fft_r2c.default(mul, [1], 0, True)", deps=["mul"],
            op="aten._fft_r2c.default", spec=_spec(2, 4), output=True),
])


class _LayoutPool(_Pool):
    """pad_stft's shape (issue 57): the compiler lays out ``mul``'s buffer column-major, and the fft fails on
    that layout: the whole chain fails, and the fft alone does where its input is laid out so; every cut fed
    the traced (row-major) layout passes."""

    def map(self, kind: str, payloads: list[dict]) -> list[dict]:
        self.asked += len(payloads)
        return [{"t": "done", "result": {"fails": "_fft_r2c" in p["source"] and (
            ("mul.Tensor" in p["source"] and "constant_pad_nd" in p["source"]) or p["inputs"][0][2] == [1, 2]),
            "signature": "E"}} for p in payloads]


def test_a_cut_whose_traced_layout_loses_the_failure_is_tried_in_other_layouts():
    lines: list[str] = []
    pool = _LayoutPool(set())
    s = Searcher(pool, PADDED, {"kind": "compile-error", "signature": "E"}, "eager", {}, jobs=2, on_step=lines.append)  # type: ignore[arg-type]
    best, keep = s.minimize(s.whole())
    assert keep == {"fft"} and best.ops == ["aten._fft_r2c.default"] and s.layout == "reversed"
    assert [sp.as_tuple()[:3] for sp in best.inputs] == [("tensor", [2, 6], [1, 2])]  # column-major, dense
    assert "1 of 3 nodes fail with the inputs the cut makes laid out reversed (the traced layout passes): kept so" \
        in lines, lines
    assert pool.asked <= 12, pool.asked
    # where the traced layout keeps it, nothing else is asked: a graph input keeps the script's layout
    s2 = Searcher(_LayoutPool(set()), PADDED, {"kind": "compile-error", "signature": "E"}, "eager", {}, jobs=2,  # type: ignore[arg-type]
                  on_step=print)
    assert s2.build({"fft"}, relayout="reversed").inputs[0].stride == [1, 2]
    assert s2.build({"pad", "mul", "fft"}, relayout="reversed").inputs[0].stride == [2, 1]
