"""Nothing a record or a name holds becomes code in repro.py: the model label, backend (a name, or a
``FILE.py:NAME`` whose path holds a line of code), the failure's signature, constraint and op, the
precision settings, the config's keys and values, the ops, the subgraph, the user's path and source line
and the versions all pass pt2kit_portable's one escaping rule. Checked on repro.render, the writer minify
calls, with every field hostile at once: the file's syntax tree is the plain one's, and running it makes
no file."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from pt2kit.minify import ir
from pt2kit.minify.parent import repro

# every character str.splitlines splits on, a docstring's quotes, backslash sequences that do not read, NUL
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
EVIL = "".join(f'{c}open("PWNED","w"){c}#' for c in BREAKS) + '"""\nopen("PWNED","w")\n"""\\N{X}\\x\\\x00\\'


def _render(s: str, kind: str, backend: str) -> str:
    spec = ir.Spec("tensor", [2], [1], "float32", "cpu", 0.0, 1.0)
    graph = ir.Graph(index=0, nodes=[
        ir.Node(name="x", op="input", spec=spec),
        ir.Node(name="relu", expr="torch.ops.aten.relu.default(x)", deps=["x"], op=f"aten.relu{s}", spec=spec,
                place=f"/m{s}/model.py:3", code=f"y = x.relu(){s}", output=True)])
    c = ir.build(graph, {"relu"})
    assert c is not None
    failure = {"kind": kind, "signature": f"RuntimeError: boom{s}", "constraint": f"no-fallback{s}",
               "op": f"aten.sort{s}", "ref": "eager64", "precision": {"allow_tf32": f"on{s}"}}
    config = {"torch._inductor.config": {f"key{s}": repr(f"value{s}"), "max_autotune": "True"}}
    return repro.render(c, failure=failure, backend=backend, config=config, model=f"model{s}", graph=0,
                        torch_version=f"2.13{s}", dynamic=False, seed=0, tool_version=f"1.0{s}", subgraph=f"cond{s}")


def _shape(text: str) -> list[str]:
    return [type(n).__name__ for n in ast.walk(ast.parse(text))]


@pytest.mark.parametrize("kind", ["accuracy", "compile-error", "crash", "nan", "violation"])
def test_every_string_field_of_a_repro_stays_in_its_docstring_comment_or_literal(kind):
    for backend in ("inductor{}", "/tmp/b{}/be.py:my_backend"):  # a path holds no NUL
        plain, hostile = (_render(s, kind, backend.format(s.replace("\x00", ""))) for s in ("", EVIL))
        assert _shape(hostile) == _shape(plain)
        doc = ast.get_docstring(ast.parse(hostile), clean=False)
        assert f"Model: model{EVIL} (" in doc  # the docstring reads back as the record's own text
        assert {"compile-error": f"raises RuntimeError: boom{EVIL}.", "crash": f"dies with RuntimeError: boom{EVIL}.",
                "violation": f"no-fallback{EVIL}: aten.sort{EVIL} in"}.get(kind, "Failure: the compiled") in doc


def test_running_a_repro_made_from_hostile_records_writes_nothing(tmp_path):
    path = tmp_path / "repro.py"
    path.write_text(_render(EVIL, "compile-error", f"/nowhere{EVIL.replace(chr(0), '')}/be.py:b"))
    run = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 125, run.stderr  # the backend file is not there: cannot test here
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("repro: cannot test here")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repro.py"]
