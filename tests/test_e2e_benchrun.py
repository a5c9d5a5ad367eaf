"""`fxcheck m.py | benchrun | reportgen` and `reportgen --compare` on two benchrun runs: benchrun
runs the models a stream names with the stream's config, forwards every line, and a planted bug
in the second run is the comparison's regression (exit 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
from e2ekit import user_env

ROOT = Path(__file__).resolve().parents[1]
# small.py:clean (relu, times 2): the comparison is under test, not the compile of a bigger net
NET = ROOT / "packages" / "minify" / "tests" / "models" / "small.py"


def _sh(cmd: str, tmp_path: Path) -> tuple[list[str], str]:
    p = subprocess.run(cmd + "; echo ${PIPESTATUS[@]}", shell=True, capture_output=True, cwd=tmp_path,
                       executable="/bin/bash", env=user_env(PT2KIT_STORE=str(tmp_path / "store")))
    return p.stdout.decode().splitlines()[-1].split(), p.stderr.decode()


def _records(path: Path) -> list[dict]:
    return [msgspec.json.decode(x) for x in path.read_bytes().splitlines()]


def test_fxcheck_into_benchrun_into_reportgen(tmp_path):
    py = sys.executable
    codes, err = _sh(f"{py} -m pt2kit.fxcheck {ROOT / 'examples' / 'tinynet.py'} -q | "
                     f"{py} -m pt2kit.benchrun --backend eager,aot_eager --repeat 5 | tee s.ndjson | "
                     f"{py} -m pt2kit.reportgen -o r.html -q", tmp_path)
    assert codes == ["0", "0", "0", "0"], err[-3000:]
    recs = _records(tmp_path / "s.ndjson")
    kinds = [r["kind"] for r in recs]
    assert kinds.count("header") == 2 and kinds.count("model") == 1 and "graph" in kinds  # fxcheck's lines forwarded
    assert sorted(r["backend"] for r in recs if r["kind"] == "bench") == ["aot_eager", "eager"]
    assert "running model file" in err
    html = (tmp_path / "r.html").read_text()
    assert '<section id="bench">' in html and "aot_eager" in html


def test_compare_two_runs_finds_the_planted_regression(tmp_path):
    py = sys.executable
    common = f"{py} -m pt2kit.benchrun {NET}:clean --repeat 5 -q"
    codes, err = _sh(f"{common} > before.ndjson", tmp_path)
    assert codes == ["0"], err[-3000:]
    codes, err = _sh(f"{common} --config cpp.inject_relu_bug_TESTING_ONLY=accuracy > after.ndjson", tmp_path)
    assert codes == ["1"], err[-3000:]  # fail_accuracy
    codes, err = _sh(f"{py} -m pt2kit.reportgen --compare before.ndjson after.ndjson -o cmp.md", tmp_path)
    assert codes == ["1"], err
    text = (tmp_path / "cmp.md").read_text().replace("\\", "")
    assert "| REGRESSION | small.py:clean × inductor (cpu) | pass | fail_accuracy |" in text
    codes, _ = _sh(f"{py} -m pt2kit.reportgen --compare before.ndjson before.ndjson -q > /dev/null", tmp_path)
    assert codes == ["0"]
