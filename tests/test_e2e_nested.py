"""A model whose input and output are torch.nested jagged tensors, through every tool: each takes it as
an input like any other (its spec writes the ragged size and the offsets) or refuses it in one line
(exit 2); a stream that ends in an upstream crash before any model record is exit 2 saying so."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2ekit import user_env

from pt2kit.testkit import Result, module, run

ROOT = Path(__file__).resolve().parents[1]
NESTED = ROOT / "tests" / "models" / "nested.py"


def _tool(tmp: Path, tool: str, *args: str, stdin: bytes = b"") -> Result:
    return run(module(f"pt2kit.{tool}", *args), stdin=stdin, cwd=tmp,
               env=user_env(PT2KIT_STORE=str(tmp / "store")), timeout=900)


def _spec(r: Result) -> dict:
    (m,) = r.kind("model")
    (spec,) = m["inputs"]
    return spec


@pytest.fixture(scope="module")
def fxcheck(tmp_path_factory):
    return _tool(tmp_path_factory.mktemp("fxcheck"), "fxcheck", str(NESTED))


@pytest.fixture(scope="module")
def kdiff(tmp_path_factory):
    return _tool(tmp_path_factory.mktemp("kdiff"), "kdiff", str(NESTED), "--grad")


@pytest.mark.xdist_group("nested_fxcheck")
def test_fxcheck_captures_a_jagged_model_and_its_spec_writes_the_ragged_size(fxcheck):
    assert fxcheck.code == 0, fxcheck.stderr[-3000:]
    spec = _spec(fxcheck)
    assert spec["shape"][0] == 2 and spec["shape"][2] == 8 and spec["shape"][1].startswith("j")
    assert (spec["layout"], spec["offsets"], spec["dtype"]) == ("jagged", [0, 3, 8], "float32")
    assert fxcheck.kind("graph")


@pytest.mark.xdist_group("nested_kdiff")
def test_kdiff_grad_compares_values_and_offsets_of_output_and_gradient(kdiff):
    assert kdiff.code == 0, kdiff.stderr[-3000:]
    diffs = {d["output"]: d for d in kdiff.kind("diff")}
    assert list(diffs) == ["out", "out.offsets()", "grad.lin.weight", "grad.lin.bias", "grad.inputs[0]",
                           "grad.inputs[0].offsets()"]
    assert diffs["out"]["shape"] == [8, 8] and diffs["out"]["metrics"]["numel"] == 64  # values(): 3 + 5 rows
    assert diffs["out.offsets()"]["dtype"] == "int64" and diffs["out.offsets()"]["atol"] == 0
    assert all(d["passed"] for d in diffs.values()) and _spec(kdiff)["offsets"] == [0, 3, 8]
    assert "nested.py: 6 of 6 leaves pass (inductor vs eager" in kdiff.stderr


def test_guardscan_varies_a_jagged_input_by_its_number_of_sequences(tmp_path):
    r = _tool(tmp_path, "guardscan", str(NESTED))
    assert r.code == 0, r.stderr[-3000:]
    assert "x: dim 0 2 -> 4" in r.stderr and "x: dim 0 2 -> 3" in r.stderr
    bad = _tool(tmp_path, "guardscan", str(NESTED), "--vary", "x:2=16")
    assert bad.code == 2 and bad.stderr.strip().splitlines()[-1].endswith(
        "x is a nested jagged tensor; only its dim 0 (how many sequences) can be varied, not dim 2")


def test_aotiprint_refuses_a_jagged_input_in_one_line(tmp_path):
    r = _tool(tmp_path, "aotiprint", str(NESTED))
    assert r.code == 2 and not r.kind("crash")
    assert r.stderr.strip().splitlines()[-1] == ("aotiprint: error: inputs[0] is a torch.nested jagged tensor: "
                                                 "torch.export, and so AOTInductor, takes none")


def test_benchrun_times_and_judges_a_jagged_model(tmp_path):
    r = _tool(tmp_path, "benchrun", str(NESTED), "--backend", "aot_eager", "--repeat", "3", "--warmup", "0")
    assert r.code == 0, r.stderr[-3000:]
    (b,) = r.kind("bench")
    assert b["accuracy"] == "pass" and _spec(r)["layout"] == "jagged"


def test_a_stream_ending_in_a_crash_before_any_model_record_is_exit_2_saying_so(tmp_path):
    crash = (b'{"kind":"header","v":1,"run":"R1","tool":"kdiff","tool_version":"1","argv":["kdiff","m.py"],'
             b'"time":"2026-11-24T20:59:40Z","host":"h","python":"3.11","store":"s"}\n'
             b'{"kind":"crash","v":1,"run":"R1","model":"m.py","stage":"load","exception":"AttributeError",'
             b'"message":"boom"}\n')
    for tool in ("minify", "kdiff"):
        r = _tool(tmp_path, tool, stdin=crash)
        assert r.code == 2, (tool, r.stderr)
        assert r.stderr.strip().splitlines()[-1] == (
            f"{tool}: error: no model record on stdin to work on: <stdin>:2: the run upstream crashed during load "
            "of m.py (AttributeError: boom) before writing one")
        assert r.kind("error")[-1]["exit_code"] == 2


def test_minify_refuses_a_jagged_input_for_aot_inductor_in_one_line(tmp_path):
    # with Inductor it cuts the dense graph of the values and offsets (minify's tests); torch.export takes none
    r = _tool(tmp_path, "minify", str(NESTED), "--backend", "aoti")
    assert r.code == 2 and not r.kind("crash"), r.stderr[-3000:]
    assert r.stderr.strip().splitlines()[-1] == (
        "minify: error: inputs[0] is a torch.nested jagged tensor: torch.export, and so --backend aoti, takes none "
        "(--backend inductor minifies the dense graph Inductor compiles from it)")
