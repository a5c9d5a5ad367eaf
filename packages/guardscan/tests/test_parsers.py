"""The torch-free readers: guard trees, graph-break texts, recompile reasons, trace files, --vary."""

from __future__ import annotations

import pytest

from pt2kit.guardscan.breaks import parse_break
from pt2kit.guardscan.findings import describe_reason, ops_of, source_of
from pt2kit.guardscan.guards import parse_guards, resolve_path
from pt2kit.guardscan.tracelog import Trace, parse_lines
from pt2kit.guardscan.variants import parse_vary
from pt2kit.runtime.common.errors import UsageError

# as torch 2.13 prints them (TORCH_LOGS=guards / the dynamo_cpp_guards_str trace event)
GUARDS = """
TREE_GUARD_MANAGER:
+- RootGuardManager
| +- DEFAULT_DEVICE: utils_device.CURRENT_DEVICE == None                           # _dynamo/output_graph.py:1122 in init_ambient_guards
| +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(key='x', framelocals_idx=1), type=<class 'torch.Tensor'>, tag_safe=(False, False)
| | +- TENSOR_MATCH: check_tensor(L['x'], Tensor, DispatchKeySet(CPU), torch.float32, device=None, requires_grad=False, size=[None, 8], stride=[8, 1])  # if x.shape[0] > 4:  # mp/gs/m2.py:4 in forward
| | +- NO_TENSOR_ALIASING: check_no_aliasing(L['x'], L['y'])
+- LAMBDA_GUARD: 5 <= L['x'].size()[0]  # if x.shape[0] > 4:  # mp/gs/m2.py:4 in forward (_dynamo/variables/tensor.py:2606 in evaluate_expr)
Guard latency = 117.68 us
"""

BREAK = """Graph break in user code at /work/m.py:8
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` to include these operations in the captured graph.

  Developer debug context: call_method TensorVariable() item () {}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html

User code traceback:
  File "/work/drive.py", line 4, in <module>
    f(x)
  File "/work/m.py", line 8, in forward
    s = y.sum().item()
"""


def test_guard_tree_gives_kind_expr_source_and_user_line():
    gs = parse_guards(GUARDS)
    assert [g.kind for g in gs] == ["DEFAULT_DEVICE", "TENSOR_MATCH", "NO_TENSOR_ALIASING", "LAMBDA_GUARD"]
    tm, lam = gs[1], gs[3]
    assert tm.source == "L['x']" and tm.code == "if x.shape[0] > 4:" and (tm.file, tm.line) == ("mp/gs/m2.py", 4)
    assert lam.expr == "5 <= L['x'].size()[0]" and lam.source == "L['x']" and lam.line == 4
    assert gs[0].source is None and gs[0].code is None
    assert resolve_path("mp/gs/m2.py", ["/usr/lib/x.py", "/tmp/gs/m2.py"]) == "/tmp/gs/m2.py"


def test_break_text_gives_reason_call_line_and_id():
    b = parse_break(BREAK)
    assert b.reason == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert (b.file, b.line, b.code) == ("/work/m.py", 8, "s = y.sum().item()")
    assert b.gb_id == "GB0124" and b.call == "Tensor.item()"
    assert b.hints and "capture_scalar_outputs = True" in b.hints[0]


@pytest.mark.parametrize("reason,guard,kind,change", [
    ("0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8", "L['x'].size()[0] == 4", "size",
     "x: dim 0 4 -> 8"),
    ("0/0: tensor 'args[0]' size mismatch at index 1. expected 3, actual 5", "L['args'][0].size()[1] == 3", "size",
     "args[0]: dim 1 3 -> 5"),
    ("0/0: tensor 'x' dtype mismatch. expected Float, actual Half", "L['x'].dtype == Float", "dtype",
     "x: dtype Float -> Half"),
    ("0/1: 5 <= x.size()[0]  # if x.shape[0] > 4:  # mp/m.py:4 in forward (_dynamo/x.py:1 in f)", "5 <= x.size()[0]",
     "guard", None),
])
def test_recompile_reasons_name_the_guard(reason, guard, kind, change):
    g, k, c, _ = describe_reason(reason)
    assert (g, k, c) == (guard, kind, change)


def test_ops_of_dynamo_graph_code():
    code = '''
        y: "f32[4, 8][8, 1]cpu" = torch._C._nn.linear(l_x_, w, b);  l_x_ = None
        sum_1: "f32[][]cpu" = y.sum()
        add: "f32[4, 8][8, 1]cpu" = y + 1
        return (sum_1, add)
'''
    assert ops_of(code) == {"torch._C._nn.linear": 1, "Tensor.sum": 1, "operator.add": 1}
    assert source_of("x") == "L['x']" and source_of("args[0]") == "L['args'][0]"


def test_trace_lines_with_payloads_and_interned_strings():
    lines = [
        'V1122 01:11:46.324000 1194 torch/_logging/structured.py:28] {"str": ["/work/m.py", 4]}',
        'V1122 01:11:46.677000 1194 torch/_dynamo/guards.py:5400] {"artifact": {"name": "recompile_reasons", '
        '"encoding": "json"}, "frame_id": 0, "frame_compile_id": 1, "attempt": 0, "has_payload": "0af3"}',
        "\t[",
        '\t"0/0: tensor \'x\' size mismatch at index 0. expected 4, actual 8"',
        "\t]",
        "not a trace line",
        'V1122 01:11:46.700000 1194 x.py:1] {"compilation_metrics": {"compile_id": "0/1", "co_name": "forward"}}',
        'V1122 01:11:46.800000 1194 x.py:1] {"dynamo_start": {"stack": []}, "frame_id": 0, "frame_compile',  # cut off
    ]
    t = Trace()
    parse_lines(lines, t)
    assert t.strings == {4: "/work/m.py"}
    assert [e.kind for e in t.events] == ["artifact", "compilation_metrics"]
    assert t.events[0].artifact == "recompile_reasons" and t.events[0].compile_id == "0/1"
    assert "size mismatch" in t.events[0].payload and t.events[1].compile_id == "0/1"


def test_vary_specs():
    v = parse_vary("x:1=32,0=2")
    assert v.target == "x" and v.sizes == {1: 32, 0: 2}
    assert parse_vary("dtype=torch.bfloat16").dtype == "bfloat16"
    assert parse_vary("mask:requires_grad").requires_grad is True
    assert parse_vary("#1:requires_grad=false").requires_grad is False
    for bad in ("0=a", "colour=red", "x:", "dtype=float7", "1x:0=2"):
        with pytest.raises(UsageError):
            parse_vary(bad)


def test_resolve_path_inverts_torchs_shortening(tmp_path):
    """torch.utils._traceback.shorten_filename drops the common prefix with torch's directory."""
    torch_dir = tmp_path / "site" / "torch"
    lib = tmp_path / "site" / "transformers" / "utils"
    (torch_dir / "_dynamo").mkdir(parents=True)
    lib.mkdir(parents=True)
    (torch_dir / "_dynamo" / "output_graph.py").write_text("")
    (lib / "generic.py").write_text("")
    assert resolve_path("transformers/utils/generic.py", [], str(torch_dir)) == str(lib / "generic.py")
    assert resolve_path("_dynamo/output_graph.py", [], str(torch_dir)) == str(torch_dir / "_dynamo" / "output_graph.py")
    assert resolve_path("<frozen _collections_abc>", [], str(torch_dir)) == "<frozen _collections_abc>"
    assert resolve_path("nowhere/x.py", [], str(torch_dir)) == "nowhere/x.py"  # as shown, never cut further


def test_recompile_reason_on_a_keyword_argument():
    guard, kind, change, _ = describe_reason(
        "0/0: tensor 'kwargs['input_ids']' size mismatch at index 0. expected 2, actual 4")
    assert (guard, kind, change) == ("L['kwargs']['input_ids'].size()[0] == 2", "size", "kwargs['input_ids']: dim 0 2 -> 4")
    assert source_of("L['self'].layers[0].weight") == "L['self'].layers[0].weight"


def test_frozen_module_location_is_kept_whole():
    (g,) = parse_guards("+- TYPE_MATCH: ___check_type_id(L['m'], 1)  # return x  # <frozen _collections_abc>:780 in get")
    assert (g.file, g.line) == ("<frozen _collections_abc>", 780)


def test_why_explains_counts_differ_only_where_they_do():
    from pt2kit.guardscan.findings import Compile, Findings, Frame
    from pt2kit.guardscan.records import why_counts

    # the first call compiled frame 0 twice (a recompile inside the call) and frame 1 once: explain says
    # 3 graphs, 2 breaks; guardscan 2 distinct graphs, no graph break with a reason
    f = Findings(frames=[Frame("0/0", 0), Frame("1/0", 1, function="cond", file="/t/_higher_order_ops/cond.py")],
                 compiles=[Compile("0/0", 0, 0, graph="g", variant="x"), Compile("0/1", 0, 1, graph="g", variant="x"),
                           Compile("1/0", 1, 0, graph="g", variant="x")],
                 totals={"x": [3, 2]})
    assert why_counts(f, "x") == (
        "1 of its graph(s) recompiled a frame already compiled in that call, counted again; explain counts every "
        "graph after the first as a break (2), though only 0 came from a graph break torch gave a reason for (the "
        "others are separate frames Dynamo compiled on their own: cond (cond.py), or recompiles)")
    assert why_counts(Findings(frames=[Frame("0/0", 0)], compiles=[Compile("0/0", 0, 0, graph="g", variant="x")],
                               totals={"x": [1, 0]}), "x") == ""


def test_public_names_are_the_functions_the_docstring_promises():
    # a public name that is also a module's name would come back as the module once that module loads
    import pt2kit.guardscan as gs
    import pt2kit.guardscan.records  # noqa: F401  (loads every module behind the public names)
    from pt2kit.guardscan import analyze, read_trace, scan

    assert gs.__all__ == ["__version__", "analyze", "read_trace", "scan"]
    assert [(f.__name__, callable(f)) for f in (analyze, read_trace, scan)] == \
        [("analyze", True), ("read_trace", True), ("scan", True)]


def test_a_float_specialised_again_names_the_users_line_never_torchs_parenthesised_one():
    """A `.item()` float a graph break hands on recompiles at each new value; torch names its own line in
    parentheses for the second and later ones. The recompile's source was "(_dynamo/output_graph.py:3375"."""
    from pt2kit.guardscan.findings import Compile, Findings, _recompile

    (g,) = parse_guards("+- LAMBDA_GUARD: L['___stack0'] == 0.25  # (_dynamo/output_graph.py:3375 in "
                        "remove_tensorify_specialized_graphargs)")
    assert (g.file, g.line) == ("_dynamo/output_graph.py", 3375)
    first = ("1/0: ___stack0 == 0.15                         # print(\"scale\", round(s, 3))  # mp/t/s4.py:13 in "
             "torch_dynamo_resume_in_forward_at_12\nUser stack trace:\n  File \"/tmp/t/s4.py\", line 13, in "
             "torch_dynamo_resume_in_forward_at_12\n    print(\"scale\", round(s, 3))")
    later = "1/1: ___stack0 == 0.25  # (_dynamo/output_graph.py:3375 in remove_tensorify_specialized_graphargs)"
    c = Compile("1/2", 1, 2, reasons=[later, first])
    rec = _recompile(c, "torch_dynamo_resume_in_forward_at_12 (/tmp/t/s4.py:12)", {}, Findings(files=["/tmp/t/s4.py"]))
    assert (rec.source, rec.code, rec.user_code) == ("/tmp/t/s4.py:13", 'print("scale", round(s, 3))', True)
    alone = _recompile(Compile("1/1", 1, 1, reasons=[later]), None, {}, Findings(files=["/tmp/t/s4.py"]))
    assert alone.source == "_dynamo/output_graph.py:3375" and not alone.user_code  # torch's, said as torch's


def test_a_recompile_on_a_line_that_ends_in_a_comment_names_that_line():
    """The guarded line ``if n > 2:  # ...``: torch's reason, then its stack trace, whose last line is that
    code, comment and all. The recompile's source was None, its code the whole trace."""
    from pt2kit.guardscan.findings import Compile, Findings, _recompile

    reason = ("0/0: n == 1                                                   # if n > 2:  # a comment on the guarded "
              "line  # mp/rc/g.py:3 in branchy\nUser stack trace:\n  File \"/tmp/rc/g.py\", line 3, in branchy\n"
              "    if n > 2:  # a comment on the guarded line")
    rec = _recompile(Compile("0/1", 0, 1, reasons=[reason]), "branchy (/tmp/rc/g.py:2)", {},
                     Findings(files=["/tmp/rc/g.py"]))
    assert (rec.source, rec.code, rec.guard) == ("/tmp/rc/g.py:3", "if n > 2:  # a comment on the guarded line", "n == 1")
    assert rec.user_code
