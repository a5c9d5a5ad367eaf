"""pt2kit.runtime.common.toplevel: a file is imported for its backend only where importing it runs nothing but
definitions (issue 55, finding 4: triage's kdiff and minify imported an unguarded script 11 more times)."""

from __future__ import annotations

import textwrap

import pytest

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.pyfile import backend_callable
from pt2kit.runtime.common.toplevel import Runs, runs_at_import, unguarded


def write(tmp_path, text, name="be.py"):
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    return f


BACKEND = textwrap.dedent("""
    import functools
    import os
    from pathlib import Path

    import torch
    from torch import nn
    from torch._dynamo.backends.common import aot_autograd

    try:
        import numpy as np
    except ImportError:
        np = None

    HERE = Path(__file__).resolve().parent
    SCALE = float(os.environ.get("SCALE", "1"))
    aten = torch.ops.aten
    torch.manual_seed(0)
    torch._dynamo.config.cache_size_limit = 16


    class Net(nn.Module):
        WIDTH = 8

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(self.WIDTH, 2)


    def planted(op):
        def backend(gm, example_inputs):
            return gm.forward

        return backend


    @functools.lru_cache(maxsize=None)
    def table():
        return {}


    relu_grad = planted(aten.relu.default)
    boxed = aot_autograd(fw_compiler=planted(aten.add.Tensor))
    model = Net().eval()
    example_inputs = (torch.randn(2, 8).to("cpu"),)
    compiled = torch.compile(model, backend=relu_grad)
    handler = lambda: train()  # noqa: E731  a lambda's body does not run on import


    def train():
        for _ in range(3):
            compiled(*example_inputs)


    if __name__ == "__main__":
        train()
""")


def test_a_file_that_only_defines_its_run_under_the_guard_is_loadable(tmp_path):
    f = write(tmp_path, BACKEND)
    assert runs_at_import(f) is None and unguarded(f, "relu_grad") is None


@pytest.mark.parametrize("tail, line", [
    ("train()", "train()"),  # the script's run, a function of its own whose body loops
    ("losses = train()", "losses = train()"),
    ("out = compiled(*example_inputs)", "out = compiled(*example_inputs)"),  # a value it made
    ("torch.compile(model)(*example_inputs)", "torch.compile(model)(*example_inputs)"),  # what a call returned
    ("torch.save(model.state_dict(), 'w.pt')", "torch.save(model.state_dict(), 'w.pt')"),
    ("print(model)", "print(model)"),
    ("import shutil\nshutil.rmtree('out', ignore_errors=True)", "shutil.rmtree('out', ignore_errors=True)"),
    ("for _ in range(2):\n    pass", "for _ in range(2):"),
    ("with torch.no_grad():\n    model(*example_inputs)", "with torch.no_grad():"),
    ("def main():\n    train()\n\nmain()", "main()"),  # main calls train: calling it runs
    ("def again():\n    return again()\n\nagain()", "again()"),  # recursion counts as running
    ("class Runner:\n    log = open('log.txt', 'w')", "log = open('log.txt', 'w')"),  # a class body runs
    ("if torch.cuda.is_available():\n    train()", "train()"),
    ("@register\ndef other(gm, inputs):\n    return gm\n\ndef register(f):\n    print(f)\n    return f",
     "@register"),  # a decorator of the file's own is called with what it decorates: here it prints
])
def test_a_top_level_that_runs_something_is_named_by_its_first_line(tmp_path, tail, line):
    f = write(tmp_path, BACKEND.replace('if __name__ == "__main__":\n    train()\n', "") + "\n" + tail + "\n")
    got = runs_at_import(f)
    assert got is not None and got.text == line, got
    assert f.read_text().splitlines()[got.line - 1].strip() == line


def test_the_refusal_is_one_line_naming_the_line_and_the_flag_that_hands_the_backend_over(tmp_path):
    f = write(tmp_path, "import torch\n\n\ndef my_backend(gm, example_inputs):\n    return gm.forward\n\n\n"
                        "def train():\n    torch.save({}, 'w.pt')\n\n\ntrain()\n", name="train.py")
    assert runs_at_import(f) == Runs(12, "train()")
    assert unguarded(f, "my_backend") == (
        "train.py runs code at import (line 12: `train()`), so its backend my_backend cannot be loaded from it "
        "without running the script again: put the backend in a file of its own and pass --backend "
        "FILE.py:my_backend, or put the script's run under if __name__ == \"__main__\":")
    # a file that does not parse is the loader's to say (its syntax error, as always)
    assert runs_at_import(write(tmp_path, "def f(:\n", name="bad.py")) is None


def test_the_loader_refuses_an_unguarded_script_before_any_of_it_runs(tmp_path):
    """`kdiff m.py --backend train.py:my_backend` (and minify's, benchrun's, a --config hook's): the one
    loader asks the rule, so the script's top level never runs: the marker it writes stays absent."""
    f = write(tmp_path, """
        from pathlib import Path


        def my_backend(gm, example_inputs):
            return gm.forward


        Path(__file__).with_name("TRAINED").write_text("ran")
    """, name="train.py")
    with pytest.raises(UsageError) as e:
        backend_callable(f"{f}:my_backend", "--backend")
    assert str(e.value) == (
        f"--backend {f}:my_backend: train.py runs code at import (line 9: `Path(__file__).with_name(\"TRAINED\")"
        ".write_text(\"ran\")`), so its backend my_backend cannot be loaded from it without running the script "
        "again: put the backend in a file of its own and pass --backend FILE.py:my_backend, or put the script's "
        "run under if __name__ == \"__main__\":")
    assert not (tmp_path / "TRAINED").exists()
    with pytest.raises(UsageError) as e:
        backend_callable(f"{f}:my_backend", "--config post_grad_custom_post_pass=", what="function or pass object")
    assert "put the code in a file of its own and pass --config post_grad_custom_post_pass=FILE.py:my_backend" \
        in str(e.value)
    assert not (tmp_path / "TRAINED").exists()
    # guarded, the same file loads, its run left under the guard
    f.write_text(f.read_text().replace("Path(__file__)", 'if __name__ == "__main__":\n    Path(__file__)'))
    assert backend_callable(f"{f}:my_backend", "--backend").__name__ == "my_backend"
    assert not (tmp_path / "TRAINED").exists()
