"""Nothing a name holds becomes code in a captured model file: a folder, function, backend, compile id,
parameter path, buffer name, string input or FX stack trace holding a line break (each one
``str.splitlines`` splits on) stays inside its comment or literal. Checked on the boot's own header and
body writer in this process (every field hostile at once, the file's syntax tree the same as with
plain names) and on a real script run from a folder named ``nl<LF>open("PWNED","w")<LF>#``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

import pt2kit.capture
from pt2kit.runtime.common.modelfile import load_model

BOOT = Path(pt2kit.capture.__file__).parent / "boot"
# every character str.splitlines splits on, then NUL and a lone surrogate (an undecodable file name)
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
HOSTILE = "".join(f'{c}open("PWNED","w"){c}#' for c in BREAKS) + '"""\\N{X}\\' + "\x00\udc80\r\n"


def _boot(monkeypatch, scratch: Path):
    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv("PT2KIT_CAPTURE_DIR", str(scratch))
    import pt2kit_capture_manifest as manifest

    return manifest


def evil(name: str = "x"):
    return torch.tensor(1.0)


def _graph(text: str) -> tuple[torch.fx.GraphModule, list]:
    """A graph holding ``text`` wherever a program's names reach the model file: FX's `# File: ... code: ...`
    lines (node stack traces), a parameter input's path, a string input."""
    root = torch.nn.Module()
    root.register_buffer("buf", torch.ones(3))
    graph = torch.fx.Graph()
    x, w, s = graph.placeholder("x"), graph.placeholder("w"), graph.placeholder("s")
    buf = graph.get_attr("buf")
    y = graph.call_function(torch.add, (x, buf))
    z = graph.call_function(torch.mul, (y, w))
    graph.output((z, s))
    gm = torch.fx.GraphModule(root, graph)
    for node in gm.graph.nodes:
        node.meta["stack_trace"] = (f'  File "/home/u/{text}/train.py", line 7, in forward{text}\n'
                                    f"    return x + buf  {text}\n")
    return gm, [torch.randn(3), torch.nn.Parameter(torch.randn(3)), f"label{text}"]


def _write(boot, monkeypatch, text: str) -> Path:
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, f"/data/{text}/s.py", f"--tag={text}"])
    line = boot.new_line(f"backend{text}")
    line.update(compile_id=f"0/0{text}", function=f"fn{text}", source=f"/data/{text}/s.py:3", mode=f"mode{text}")
    gm, args = _graph(text)
    boot.record(line, gm, args, f"handed{text}", names={"w": f"fc{text}.weight"})
    return Path(os.environ['PT2KIT_CAPTURE_DIR']) / f'p{os.getpid()}' / line["file"]


def test_every_string_field_of_a_model_file_stays_in_its_comment_or_literal(tmp_path, monkeypatch):
    boot = _boot(monkeypatch, tmp_path / "scratch")
    plain, hostile = _write(boot, monkeypatch, "n"), _write(boot, monkeypatch, HOSTILE)
    text, plain_text = hostile.read_text(), plain.read_text()
    # the same statements, calls and names as the file written with a plain name: no line became code
    shape = [Counter(type(n).__name__ for n in ast.walk(ast.parse(t))) for t in (text, plain_text)]
    assert shape[0] == shape[1]
    assert len(text.splitlines()) == len(plain_text.splitlines())  # for every reader, not only Python's
    assert "\\u2028open(" in text and "File: /home/u/\\n" not in text  # escaped where FX wrote it
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    loaded = load_model(str(hostile))
    assert list(cwd.iterdir()) == [] and not (hostile.parent / "PWNED").exists()
    assert loaded.inputs[-1] == f"label{HOSTILE}"  # a string input keeps its value, as a literal
    assert loaded.model.get_parameter(f"fc{HOSTILE}.weight").shape == (3,)  # a path keeps its name, as a literal


def test_the_boot_escapes_by_the_one_rule_minifys_repros_are_written_by(tmp_path, monkeypatch):
    """One escaping function (and one literal writer) for every writer of Python: the boot's are pt2kit_portable's (imported from the copy
    capture puts on the script's PYTHONPATH), the same object minify's repro writer calls."""
    _boot(monkeypatch, tmp_path / "scratch")
    import pt2kit_capture_code
    import pt2kit_capture_write

    import pt2kit_portable

    assert pt2kit_capture_code.escape is pt2kit_capture_write.escape is pt2kit_portable.escape
    assert pt2kit_capture_code.literal is pt2kit_capture_write.literal is pt2kit_portable.literal
    assert pt2kit_capture_code.comment('a\u2028open("PWNED","w")') == '# a\\u2028open("PWNED","w")'


def test_a_name_written_as_code_must_be_an_identifier(tmp_path, monkeypatch):
    boot = _boot(monkeypatch, tmp_path / "scratch")
    import pt2kit_capture_write as write

    graph = torch.fx.Graph()
    graph.output(graph.call_function(torch.neg, (graph.placeholder("x"),)))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    next(iter(gm.graph.nodes)).target = 'x):\n    open("PWNED","w")\n    (x'  # renamed after FX's own exec
    with pytest.raises(ValueError, match="not an identifier"):
        write.write(gm, [torch.ones(2)], tmp_path, "g", ["h"], "none", 0)
    assert not (tmp_path / "g.py").exists()
    root = torch.nn.Module()
    root.register_buffer("buf", torch.ones(2))
    graph = torch.fx.Graph()
    graph.output(graph.get_attr("buf"))
    gm = torch.fx.GraphModule(root, graph)
    (node, _) = gm.graph.nodes
    node.target = 'buf")\nopen("PWNED","w")\n("'  # FX's codegen writes getattr(self, "<target>") unescaped
    with pytest.raises(ValueError, match="not a dotted name"):
        write.write(gm, [], tmp_path, "g", ["h"], "none", 0)
    assert not (tmp_path / "g.py").exists()
    evil.__module__ = 'os\nopen("PWNED","w")\n#'  # FX imports a call's target by its module's name
    graph = torch.fx.Graph()
    graph.output(graph.call_function(evil, (graph.placeholder("x"),)))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    line = boot.new_line("eager")
    line["compile_id"] = "0/0"
    try:
        boot.record(line, gm, [torch.ones(2)], "handed")
    except ValueError as e:  # refused, or written without the import: never the line
        assert "not an import" in str(e)
    for f in (tmp_path / "scratch").rglob("*.py"):
        assert 'open("PWNED"' not in f.read_text().replace("\\n", "")


SCRIPT = """
import sys

import torch


def backend(gm, example_inputs):
    return gm.forward


backend.__name__ = backend.__qualname__ = 'b\\nopen("PWNED_BACKEND", "w")\\n#'


def step(x):
    return torch.relu(x) * 2


print(torch.compile(step, backend=backend)(torch.randn(4)).shape)
"""


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """A real script, run with the boot from a folder whose name holds a line of code."""
    tmp = tmp_path_factory.mktemp("names")
    folder = tmp / 'nl\nopen("PWNED","w")\n#'
    folder.mkdir()
    (folder / "s.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PT2KIT_CAPTURE")}
    env.update(PYTHONPATH=os.pathsep.join([str(BOOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
               PT2KIT_CAPTURE_DIR=str(tmp / "scratch"))
    p = subprocess.run([sys.executable, str(folder / "s.py")], capture_output=True, text=True, env=env, cwd=folder,
                       timeout=600)
    return p, tmp


@pytest.mark.xdist_group("boot-names")
def test_a_folder_name_with_a_line_of_code_stays_a_comment(hostile_run, monkeypatch):
    p, tmp = hostile_run
    assert p.returncode == 0, p.stderr
    (model,) = (tmp / "scratch").glob("p*/g*.py")
    text = model.read_text()
    assert "source: " + str(tmp) + '/nl\\nopen("PWNED","w")\\n#/s.py:' in text
    assert 'backend: b\\nopen("PWNED_BACKEND", "w")\\n#' in text
    calls = [n.func.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert "open" not in calls
    cwd = tmp / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    loaded = load_model(str(model))
    assert loaded.call()[0].shape == (4,)
    assert list(cwd.iterdir()) == [] and not list(tmp.rglob("PWNED*"))
