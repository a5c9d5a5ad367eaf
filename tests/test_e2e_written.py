"""A wrong in-place write reaches minify and is cut (issue 45): `kdiff adam_step.py --backend ...:buggy_lerp
| minify` on a compiled Adam step that returns nothing and writes exp_avg wrong (aten.lerp's decomposition
planted wrong, packages/kdiff/tests/models/adam_step.py). minify judges what the step writes in place as
kdiff does (pt2kit.runtime.worker.written); it said 'passes assert_close: nothing to minify', exit 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ADAM = Path(__file__).resolve().parents[1] / "packages" / "kdiff" / "tests" / "models" / "adam_step.py"


def test_a_wrong_in_place_write_is_minified_to_the_op_that_wrote_it(tmp_path):
    backend = f"{ADAM}:buggy_lerp"
    store = ["--store", str(tmp_path / "store")]
    kd = subprocess.run([sys.executable, "-m", "pt2kit.kdiff", str(ADAM), "--backend", backend, "--no-localize",
                         *store], capture_output=True, cwd=tmp_path)
    assert kd.returncode == 1, kd.stderr.decode()[-3000:]
    # the diff names the code it compiled with, which a stream never makes minify import: one line, exit 2
    bare = subprocess.run([sys.executable, "-m", "pt2kit.minify", *store], input=kd.stdout, capture_output=True,
                          cwd=tmp_path)
    assert bare.returncode == 2 and bare.stderr.decode().endswith(
        f"the diff compiled it with --backend {backend}, code a stream does not run: give minify --backend {backend}\n"
    ), bare.stderr.decode()[-2000:]
    mini = subprocess.run([sys.executable, "-m", "pt2kit.minify", "--no-bisect", "--backend", backend, "-o", "repro.py",
                           *store], input=kd.stdout, capture_output=True, cwd=tmp_path)
    err = mini.stderr.decode()
    assert mini.returncode == 1, err[-3000:]
    assert "adam_step.py: " in err and " -> 1 ops (Tensor.lerp_), " in err and "reproduced 3 of 3" in err, err[-3000:]
    assert "nothing to minify" not in err
    assert (tmp_path / "repro.py").is_file()
