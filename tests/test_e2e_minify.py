"""`fxcheck m.py | kdiff | minify | reportgen` and `fxcheck m.py --deny OP | minify`: minify takes the failure a
stream names, forwards every line, and its repro record reaches the page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from e2ekit import user_env

ROOT = Path(__file__).resolve().parents[1]
NET = ROOT / "packages" / "minify" / "tests" / "models"
# the pipes run small.py:clean (relu, times 2): the pipe is what is tested here; minify's search on a
# bigger net (the residual net of its issue) is its own tests' (a third of the compile and search time)


def _pipe(cmd: str, tmp_path: Path) -> tuple[list[str], list[dict], str]:
    """The exit status of every command of the pipe, the records tee saved, stderr."""
    p = subprocess.run(cmd + "; echo ${PIPESTATUS[@]}", shell=True, capture_output=True, cwd=tmp_path,
                       executable="/bin/bash", env=user_env(PT2KIT_STORE=str(tmp_path / "store")))
    recs = [msgspec.json.decode(x) for x in (tmp_path / "s.ndjson").read_bytes().splitlines()]
    return p.stdout.decode().splitlines()[-1].split(), recs, p.stderr.decode()


@pytest.fixture(scope="module")
def product_line(tmp_path_factory):
    """`fxcheck m.py | kdiff --config RELU_BUG=accuracy | minify -o repro.py | reportgen`, run once for the
    three tests of its group (each a stage of the line a user runs: kdiff's diffs, minify's repro, the
    page): kdiff's stream (k.ndjson), minify's (s.ndjson), stderr and the page."""
    d = tmp_path_factory.mktemp("product-line")
    py = sys.executable
    codes, recs, err = _pipe(
        f"{py} -m pt2kit.fxcheck {NET / 'small.py'}:clean -q | "
        f"{py} -m pt2kit.kdiff --config cpp.inject_relu_bug_TESTING_ONLY=accuracy -q | tee {d}/k.ndjson | "
        f"{py} -m pt2kit.minify --no-bisect -o {d}/repro.py | tee {d}/s.ndjson | "
        f"{py} -m pt2kit.reportgen -o {d}/r.html -q", d)
    kdiff = [msgspec.json.decode(x) for x in (d / "k.ndjson").read_bytes().splitlines()]
    return d, codes, kdiff, recs, err


@pytest.mark.xdist_group("product-line")
def test_fxcheck_into_kdiff_into_reportgen(product_line):
    """kdiff diffs the model fxcheck loaded, forwarding fxcheck's records, and the page shows its diffs."""
    d, codes, recs, _, err = product_line
    assert codes == ["0", "1", "0", "1", "0", "0"], err[-3000:]  # fxcheck clean, kdiff fails
    headers = {r["tool"]: r for r in recs if r["kind"] == "header"}
    assert sorted(headers) == ["fxcheck", "kdiff"]
    assert headers["kdiff"]["device"] == "cpu"  # piped: the device of the model record it ran
    model = [r for r in recs if r["kind"] == "model"]
    assert len(model) == 1  # kdiff reused fxcheck's model record and wrote none of its own
    diffs = [r for r in recs if r["kind"] == "diff"]
    assert {x["model"] for x in diffs} == {"small.py:clean"} and not all(x["passed"] for x in diffs)
    (div,) = [r for r in recs if r["kind"] == "divergence"]
    line = (NET / "small.py").read_text().splitlines().index("        return torch.relu(x) * 2") + 1
    assert div["op"] == "aten.relu.default" and div["source"].endswith(f"small.py:{line}"), div
    html = (d / "r.html").read_text()
    assert '<section id="diffs">' in html and "First divergence" in html and 'alt="error heatmap' in html


@pytest.mark.xdist_group("product-line")
def test_kdiff_into_minify_into_reportgen(product_line):
    d, codes, _, recs, err = product_line
    assert codes[3:] == ["1", "0", "0"], err[-3000:]  # minify made a repro, the page is written
    kinds = [r["kind"] for r in recs]
    headers = sorted(r["tool"] for r in recs if r["kind"] == "header")
    assert headers == ["fxcheck", "kdiff", "minify"] and "diff" in kinds and "divergence" in kinds  # forwarded
    (rep,) = [r for r in recs if r["kind"] == "repro"]
    # the stream's model ran with the stream's config (the planted bug), and the repro keeps it
    assert rep["ops"] == ["aten.relu.default"] and rep["config"] == {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}
    assert rep["reproduced"] == 3 and (d / "repro.py").is_file()
    assert "running model file" in err and "minifying the accuracy failure of small.py:clean" in err
    html = (d / "r.html").read_text()
    assert '<section id="repros">' in html and "3 of 3" in html


@pytest.mark.xdist_group("product-line")
def test_the_product_line_fxcheck_kdiff_minify_runs_the_model_as_kdiff_did(product_line):
    """`fxcheck m.py | kdiff --config K=V | minify`: kdiff's failing diffs were seen under its own
    --config (fxcheck's model record has none): its header says so, and minify re-runs the model so."""
    _, codes, _, recs, err = product_line
    assert codes[:4] == ["0", "1", "0", "1"], err[-3000:]
    (model,) = [r for r in recs if r["kind"] == "model"]
    assert model.get("config", {}) == {}  # fxcheck's record: kdiff ran it under its own setting
    (kd,) = [r for r in recs if r["kind"] == "header" and r["tool"] == "kdiff"]
    assert kd["config"] == {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}
    (rep,) = [r for r in recs if r["kind"] == "repro"]
    assert rep["ops"] == ["aten.relu.default"] and rep["config"] == {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}
    assert rep["reproduced"] == 3


def test_an_in_place_op_denied_before_functionalization_is_not_minified_and_says_why(tmp_path):
    py = sys.executable
    codes, recs, err = _pipe(
        f"{py} -m pt2kit.fxcheck {ROOT / 'examples' / 'tinynet.py'} --deny aten.relu_ -q | "
        f"{py} -m pt2kit.minify | tee {tmp_path}/s.ndjson > /dev/null", tmp_path)
    assert codes == ["1", "0", "0"], err[-3000:]  # nothing minify can keep: nothing to minify
    assert not [r for r in recs if r["kind"] == "repro"]
    assert "aten.relu_.default is an in-place op: fxcheck saw it before functionalization" in err
    assert "nothing to minify" in err


def test_fxcheck_violation_into_minify(tmp_path):
    py = sys.executable
    codes, recs, err = _pipe(
        f"{py} -m pt2kit.fxcheck {NET / 'small.py'}:conv --deny aten.convolution -q | "
        f"{py} -m pt2kit.minify | tee {tmp_path}/s.ndjson > /dev/null", tmp_path)
    assert codes == ["1", "1", "0"], err[-3000:]
    (rep,) = [r for r in recs if r["kind"] == "repro"]
    assert rep["failure"] == "violation" and rep["ops"] == ["aten.convolution.default"] and rep["reproduced"] == 3


def test_an_alignment_violation_deep_in_a_net_keeps_a_misaligned_size(tmp_path):
    """`fxcheck --align 16 | minify`: the repro holds the op whose output is misaligned, with sizes
    shrunk only as far as they stay misaligned (aligned ones stay aligned), and passes once aligned."""
    import re

    py = sys.executable
    codes, recs, err = _pipe(
        f"{py} -m pt2kit.fxcheck {NET / 'align_mlp.py'}:make --align 16 -q | "
        f"{py} -m pt2kit.minify --no-bisect -o {tmp_path}/repro.py | tee {tmp_path}/s.ndjson > /dev/null", tmp_path)
    assert codes == ["1", "1", "0"], err[-3000:]
    (rep,) = [r for r in recs if r["kind"] == "repro"]
    assert rep["signature"] == "align 16: aten.mul.Tensor" and rep["ops"] == ["aten.mul.Tensor"]
    assert rep["nodes_before"] > 10 and rep["reproduced"] == 3 and rep["inputs_after"] < rep["inputs_before"]
    repro = tmp_path / "repro.py"
    shape = re.search(r"INPUTS = \[\('tensor', \[(\d+), (\d+)\]", repro.read_text())
    assert shape and int(shape[1]) % 16 and int(shape[1]) >= 2 and int(shape[2]) == 16, repro.read_text()[:600]
    run = [py, "-I", "-c", f"import sys, runpy; sys.modules['pt2kit'] = None; sys.argv = [{str(repro)!r}]; "
                            f"runpy.run_path({str(repro)!r}, run_name='__main__')"]
    p = subprocess.run(run, capture_output=True, text=True)
    assert p.returncode == 1 and "align: aten.mul.Tensor in the graph" in p.stdout, p.stdout + p.stderr
    repro.write_text(repro.read_text().replace(f"[('tensor', [{shape[1]}, 16]", "[('tensor', [16, 16]", 1))
    p = subprocess.run(run, capture_output=True, text=True)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr
