"""guardscan as a user runs it: real torch.compile, the records, the user's lines and the exit codes."""

from __future__ import annotations

import pytest
from gstest import MODELS, Result, guardscan_in


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each model scanned once for the module (a scan is a few real compiles)."""
    tmp = tmp_path_factory.mktemp("gs")
    cache: dict[tuple[str, ...], Result] = {}

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        if args not in cache or env:
            cache[args] = guardscan_in(tmp, *args, env=env)
        return cache[args]

    run.tmp = tmp
    return run


@pytest.mark.xdist_group("item")  # runs() scans item.py once for both
def test_item_gives_two_graphs_one_break_at_the_item_line(runs):
    r = runs(str(MODELS / "item.py"))
    assert r.code == 1, r.stderr
    assert len(r.kind("graph")) == 2
    (b,) = r.kind("graph_break")
    assert "Tensor.item()" in b["reason"] and b["call"] == "Tensor.item()"
    assert b["source"] == f"{MODELS / 'item.py'}:12" and b["code"] == "scale = y.abs().max().item()"
    assert b["gb_id"].startswith("GB") and b["graph"] == 0
    advice = {a["rule"]: a for a in r.kind("advice")}
    assert advice["scalar_outputs"]["change"] == "torch._dynamo.config.capture_scalar_outputs = True"
    assert advice["move_item"]["change"].startswith("scale = y.abs().max()  #")
    assert f"graph break at {MODELS / 'item.py'}:12" in r.stderr


def test_size_branch_recompiles_and_names_the_failing_guard(runs):
    r = runs(str(MODELS / "branch.py"))
    assert r.code == 1, r.stderr
    first, second = r.kind("recompile")
    assert first["expected"] is True and first["guard"] == "L['x'].size()[0] == 6"
    assert first["trigger"] == "x: dim 0 6 -> 12"
    assert second.get("expected", False) is False and second["frame"] == "0/2"
    assert second["guard"] == "5 <= x.size()[0]" and second["trigger"] == "x: dim 0 6 -> 3"
    assert second["source"] == f"{MODELS / 'branch.py'}:6" and second["code"] == "if x.shape[0] > 4:"
    assert [(v["name"], v["outcome"]) for v in r.kind("variant")] == [
        ("example inputs", "compiled"), ("x: dim 0 6 -> 12", "recompiled"), ("x: dim 0 6 -> 3", "recompiled")]
    assert "shape_branch" in {a["rule"] for a in r.kind("advice")}
    guards = [g for g in r.kind("guard") if g["frame"] == "0/0" and g["guard"] == "TENSOR_MATCH"]
    assert guards and guards[0]["source"] == "L['x']" and "size=[6, 3]" in guards[0]["expr"]


def test_clean_model_has_no_breaks_and_one_expected_recompile(runs):
    r = runs(str(MODELS / "clean.py"))
    assert r.code == 0, r.stderr
    assert r.kind("graph_break") == []
    (rc,) = r.kind("recompile")
    assert rc["expected"] is True and rc["trigger"] == "x: dim 0 4 -> 8, mask: dim 0 4 -> 8"
    assert [v["outcome"] for v in r.kind("variant")] == ["compiled", "recompiled", "reused"]
    (a,) = r.kind("advice")
    assert a["rule"] == "mark_dynamic" and a["change"].startswith("torch._dynamo.mark_dynamic(x, 0)")
    assert "0 recompile(s) (+1 expected)" in r.stderr


@pytest.mark.xdist_group("trace")  # the trace directory it writes is the next test's too
def test_trace_directory_gives_the_same_breaks_as_the_live_run(runs):
    trace = runs.tmp / "trace"
    live = runs(str(MODELS / "item.py"), "--quiet", env={"TORCH_TRACE": str(trace)})
    offline = runs("--trace", str(trace))
    assert offline.code == live.code == 1, offline.stderr

    def key(r):
        return [(b["reason"], b["source"], b["code"], b["gb_id"]) for b in r.kind("graph_break")]

    assert key(offline) == key(live) and len(key(live)) == 1
    assert [g["nodes"] for g in offline.kind("graph")] == [g["nodes"] for g in live.kind("graph")]
    assert [(x["frame"], x["guard"], x.get("expected")) for x in offline.kind("recompile")] == \
        [(x["frame"], x["guard"], x.get("expected")) for x in live.kind("recompile")]


@pytest.mark.xdist_group("trace")
def test_captured_graphs_are_scanned_from_their_scripts_trace(runs):
    """`pt2kit capture -- python item.py | guardscan`: the two graphs of one process share its trace, which
    is read once, from the store the capture's header names, and gives what --trace gives; nothing runs."""
    import msgspec

    from pt2kit.schema import Captured, Header, Model, Store

    trace = runs.tmp / "trace"
    if not trace.exists():  # the test above wrote it (made here when run alone)
        runs(str(MODELS / "item.py"), "--quiet", env={"TORCH_TRACE": str(trace)})
    offline = runs("--trace", str(trace))
    cap = Store(runs.tmp / "capstore")
    (log,) = trace.glob("*.log")
    blob = cap.put(log.read_bytes(), "text/plain", ".log")
    code = cap.put((MODELS / "item.py").read_bytes(), "text/x-python", ".py")
    argv = ["python", "item.py"]
    lines = [Header(v=1, run="r", tool="capture", tool_version="0.1.0", argv=argv, time="t", host="h", python="3",
                    store=str(cap.root))]
    lines += [Model(v=1, run="r", model=f"item.py[{cid}]", file=str(cap.path(code)),
                    captured=Captured(command=argv, compile_id=cid, code=code, trace=blob)) for cid in ("0/0", "1/0")]
    stream = b"".join(msgspec.json.encode(x) + b"\n" for x in lines)
    r = guardscan_in(runs.tmp, stdin=stream)
    assert r.code == offline.code == 1, r.stderr
    assert r.stdout.startswith(stream[:stream.index(b"\n")])  # the stream is forwarded
    key = [(b["model"], b["reason"], b["source"], b["code"]) for b in r.kind("graph_break")]
    assert key == [("item.py", b["reason"], b["source"], b["code"]) for b in offline.kind("graph_break")]
    assert key[0][2] == f"{MODELS / 'item.py'}:12"
    assert [g["model"] for g in r.kind("graph")] == ["item.py"] * len(offline.kind("graph"))
    assert r.stderr.count("reading the script's structured trace") == 1 and "running model file" not in r.stderr
    assert f"item.py: graph break at {MODELS / 'item.py'}:12" in r.stderr
    # an option for a graph guardscan runs is never dropped silently: the graph is read from its trace, not run
    r = guardscan_in(runs.tmp, "--backend", "inductor", "--vary", "0=16", stdin=stream)
    assert r.code == 2 and r.stderr.count("guardscan: error: ") == 1, r.stderr
    assert "guardscan: error: --vary, --backend: item.py is a graph pt2kit capture took" in r.stderr, r.stderr


def test_recompile_limit_hit_is_reported_with_its_advice(runs):
    r = runs(str(MODELS / "branch.py"), "--no-dynamic", "--no-default-vary", "--vary", "0=7", "--vary", "0=8",
             "--vary", "0=9", "--recompile-limit", "2")
    assert r.code == 1, r.stderr
    assert [v["outcome"] for v in r.kind("variant")] == ["compiled", "recompiled", "eager", "unknown"]
    assert [x.get("compiled", True) for x in r.kind("recompile")] == [True, False]
    (a,) = [a for a in r.kind("advice") if a["rule"] == "recompile_limit"]
    assert a["change"] == "torch._dynamo.config.recompile_limit = 4"


def test_print_break_carries_torchs_hint(runs):
    r = runs(str(MODELS / "printing.py"))
    (b,) = r.kind("graph_break")
    assert b["source"] == f"{MODELS / 'printing.py'}:6" and b["code"] == 'print("mean", t.mean())'
    (a,) = [a for a in r.kind("advice") if a["rule"] == "graph_break"]
    assert "print" in a["message"] and a["source"] == b["source"]
    # a resume function's tensors follow from the input's change: one mark_dynamic advice, for x
    assert [a["change"].split("  #")[0] for a in r.kind("advice") if a["rule"] == "mark_dynamic"] == \
        ["torch._dynamo.mark_dynamic(x, 0)"]


def test_crash_is_a_record_and_exit_3_with_the_stream_intact(runs):
    r = runs(str(MODELS / "crashes.py"))
    assert r.code == 3
    assert r.records[0]["kind"] == "header" and r.records[-1]["kind"] == "crash"
    c = r.records[-1]
    assert c["signal"] == "SIGSEGV" and c["stage"] == "compile and run (example inputs)"
    assert "crashes.py" in c["stderr_tail"]


@pytest.mark.parametrize("args,message", [
    (["nosuch.py"], "nosuch.py: no such model file"),
    (["--trace", "nosuchdir"], "no such trace directory"),
    ([str(MODELS / "item.py"), "--vary", "0=big"], "dimension 0 needs a size"),
    ([str(MODELS / "item.py"), "--vary", "colour=red"], "unknown key 'colour'"),
    ([str(MODELS / "item.py"), "--vary", "y:0=3"], "no input 'y'; the inputs are x"),
    ([str(MODELS / "item.py"), "--trace", "."], "not both"),
    (["--trace", ".", "--dynamic"], "--dynamic/--no-dynamic: a trace directory's graphs were compiled by the script"),
    ([str(MODELS / "item.py"), "--timeout", "1e300"], "--timeout 1e+300: expected a finite number > 0 and <= 604800"),
])
def test_bad_input_is_one_line_and_exit_2(runs, args, message):
    r = runs(*args)
    assert r.code == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("guardscan: error:")]
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_help_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys\nfrom pt2kit.guardscan.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert not {'torch', 'matplotlib', 'triton', 'rich'} & set(sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--vary" in p.stdout and "Exit codes:" in p.stdout


def test_keyword_arguments_give_the_expected_recompile_not_an_unexpected_one(runs):
    r = runs(str(MODELS / "kwargs_wrapper.py"))
    assert r.code == 0, r.stderr
    (rc,) = r.kind("recompile")
    assert rc["expected"] is True and rc["guard"] == "L['kwargs']['x'].size()[0] == 4"
    advice = {a["rule"]: a for a in r.kind("advice")}
    assert advice["mark_dynamic"]["change"].startswith("torch._dynamo.mark_dynamic(example_inputs['x'], 0)")


@pytest.mark.xdist_group("item")  # runs() scans item.py once for both
def test_totals_match_explain_and_guards_are_summarised(runs):
    import torch

    from pt2kit.runtime.common.modelfile import load_model

    r = runs(str(MODELS / "item.py"))
    loaded = load_model(str(MODELS / "item.py"))
    torch._dynamo.reset()
    e = torch._dynamo.explain(loaded.model)(*loaded.inputs)
    first = r.kind("variant")[0]
    assert (first["graphs"], first["breaks"]) == (e.graph_count, e.graph_break_count) == (2, 1)
    assert "as torch._dynamo.explain counts the first call: 2 graph(s), 1 break(s)" in r.stderr
    guards = r.kind("guard")
    assert all(g["full"]["path"] == guards[0]["full"]["path"] for g in guards if g["frame"] == guards[0]["frame"])
    assert sum(g.get("count", 1) for g in guards) == int(r.stderr.rsplit(", ", 1)[1].split()[0])
    assert any(g.get("user") for g in guards) and all("/" in g["user_source"].split(":")[0]
                                                      for g in guards if g.get("user_source"))


def test_a_recompile_whose_compile_raised_is_not_expected_nor_made_dynamic(tmp_path):
    """A script calls a compiled Linear(8, 4) with width 8, then 6: the guard on dim 1 fails, the recompile
    raises a shape error and the script ends. guardscan --trace counted it expected (automatic dynamic
    shapes), exit 0, and advised mark_dynamic on that width."""
    import subprocess
    import sys

    (tmp_path / "widths.py").write_text(
        "import torch\n\nfc = torch.compile(torch.nn.Linear(8, 4), backend='eager')\nfc(torch.randn(2, 8))\n"
        "fc(torch.randn(2, 6))\n")
    script = subprocess.run([sys.executable, "widths.py"], cwd=tmp_path, capture_output=True, text=True,
                            env={"TORCH_TRACE": str(tmp_path / "trace"), "PATH": "/usr/bin:/bin"})
    assert script.returncode == 1 and "a and b must have same reduction dim" in script.stderr
    r = guardscan_in(tmp_path, "--trace", str(tmp_path / "trace"))
    assert r.code == 1, r.stderr
    (rc,) = r.kind("recompile")
    assert (rc["frame"], rc.get("expected", False), rc["guard"]) == ("0/1", False, "L['args'][0].size()[1] == 8")
    (a,) = r.kind("advice")
    assert a["rule"] == "recompile_raised" and a["message"].startswith(
        "0/1 recompiled on args[0]: dim 1 8 -> 6 and the compile raised TorchRuntimeError: "
        "RuntimeError('a and b must have same reduction dim")
    assert "1 recompile(s), " in r.stderr and "(+1 expected)" not in r.stderr
