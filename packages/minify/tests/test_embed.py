"""The closure-by-source embedder (pt2kit.minify.parent.embed): what a repro.py carries of pt2kit is exactly what
its check reaches, in an order Python can run, and nothing of pt2kit is imported by it."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from pt2kit.minify.parent.embed import closure

HELPERS = '''
"""A module the way pt2kit's are: imports, constants, helpers, a class used as a base where it is defined."""

import math
import os.path
from collections import OrderedDict as Ordered

SCALE = 3  # a constant a function reads when it is called
OFFSET = SCALE + 1  # one whose value needs another where it is defined
UNUSED = 99


def unused():
    return UNUSED


def entry(x):
    """A function reaching two helpers and a constant."""
    return double(x) + offset_of(x)


def double(x):
    return x * SCALE


def offset_of(x):
    def inner(y):  # a nested function's global is the module's too
        return y + OFFSET
    return inner(math.floor(x))


def local_import(x):
    """It imports what it uses itself, as pt2kit_portable's functions import torch."""
    import math

    return math.sqrt(x)


class Base:
    pass


# why it derives from Base: its comment comes along
class Child(Base):
    KIND = Ordered(a=1)

    def where(self):
        """Its docstring."""
        return os.path.basename("/a/b")
'''

SHADOW = '''
from helpers_mod import SCALE, double  # a re-export: embedded from where it is defined


def shadowed(x):
    return double(x) - SCALE
'''


@pytest.fixture
def modules(tmp_path, monkeypatch):
    (tmp_path / "helpers_mod.py").write_text(HELPERS)
    (tmp_path / "shadow_mod.py").write_text(SHADOW)
    (tmp_path / "clash_mod.py").write_text("SCALE = 4\n\n\ndef clash(x):\n    return x * SCALE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    # the embedder reads sources, it imports none (a repro's check imports torch; minify's parent does not)
    assert not {"helpers_mod", "shadow_mod", "clash_mod"} & set(sys.modules)


MINE = ("helpers_mod", "shadow_mod", "clash_mod")  # embedded as pt2kit's modules are


def test_a_function_reaching_two_helpers_and_a_constant_embeds_exactly_those_in_order_and_runs(modules):
    c = closure([("helpers_mod", "entry")], docstrings=False, ours=MINE)
    # a caller before its callees, as the text is read; a constant whose value needs another after that one
    assert c.names == ["entry", "double", "SCALE", "offset_of", "OFFSET"]
    assert c.imports == ["import math"] and c.origins() == {"helpers_mod": c.names}
    assert "UNUSED" not in c.source() and "unused" not in c.source() and '"""' not in c.source()
    assert c.source().index("SCALE = 3") < c.source().index("OFFSET = SCALE + 1")
    script = "\n".join(c.imports) + "\n\n" + c.source() + "\nprint(entry(2.5))\n"
    p = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "13.5\n", p.stderr  # 2.5 * 3 + (2 + 4)


def test_a_class_comes_after_what_its_definition_needs_with_its_comment_and_its_imports(modules):
    c = closure([("helpers_mod", "Child")], ours=MINE)
    assert c.names == ["Base", "Child"]
    assert c.imports == ["from collections import OrderedDict as Ordered", "import os.path"]
    assert "# why it derives from Base: its comment comes along\nclass Child(Base):" in c.source()
    assert '"""Its docstring."""' in c.source()  # kept unless asked
    assert '"""' not in closure([("helpers_mod", "Child")], docstrings=False, ours=MINE).source()
    ns: dict = {}
    exec("\n".join(c.imports) + "\n" + c.source(), ns)
    assert ns["Child"]().where() == "b" and issubclass(ns["Child"], ns["Base"])


def test_a_functions_own_import_of_a_hoisted_module_becomes_the_tops_one(modules):
    kept = closure([("helpers_mod", "local_import")], docstrings=False, ours=MINE)
    assert "    import math\n" in kept.source() and kept.imports == []
    c = closure([("helpers_mod", "local_import")], docstrings=False, ours=MINE, hoist=("math",))
    assert c.source() == "def local_import(x):\n    return math.sqrt(x)\n" and c.imports == ["import math"]
    ns: dict = {}
    exec("\n".join(c.imports) + "\n" + c.source(), ns)
    assert ns["local_import"](9.0) == 3.0


def test_a_re_exported_name_is_embedded_from_its_definition_and_a_clash_is_refused(modules):
    c = closure([("shadow_mod", "shadowed")], ours=MINE)
    assert c.origins() == {"shadow_mod": ["shadowed"], "helpers_mod": ["double", "SCALE"]}
    assert not [i for i in c.imports if "helpers_mod" in i]  # nothing of ours is imported
    with pytest.raises(ValueError, match=re.escape("SCALE: both helpers_mod.SCALE and clash_mod.SCALE")):
        closure([("helpers_mod", "double"), ("clash_mod", "clash")], ours=MINE)
    with pytest.raises(ValueError, match=re.escape("helpers_mod.nowhere: not defined at its module's top level")):
        closure([("helpers_mod", "nowhere")], ours=MINE)


def test_a_repro_check_carries_no_pt2kit_import_and_only_what_its_main_reaches():
    from pt2kit.minify.judge import plan

    how = plan.repro({"kind": "nan", "signature": "nan"}, "inductor", {})
    c = closure([(plan.ANSWER, "main"), *how.values()], docstrings=False)
    assert all("pt2kit" not in i for i in c.imports) and "import torch" in c.imports
    source = c.source()
    for absent in ("def violations(", "def aoti_run(", "def gradients(", "def float64_mode(", "def load_file_attr(",
                   "def exception_signature("):  # a nan judged on an inference graph through inductor needs none
        assert absent not in source
    assert textwrap.dedent(source) == source and "def nonfinite(" in source


def test_what_a_repro_carries_follows_its_failure():
    """A plain CPU accuracy failure of an aten graph carries no decomposition table, no float64_mode and no
    layout code; a config that puts a decomposition into Inductor's table, a graph naming a float32 dtype and an
    input with a storage offset each bring theirs back (issue 58)."""
    from pt2kit.minify.judge import plan

    accuracy, plain_spec = {"kind": "accuracy", "signature": "accuracy"}, ("tensor", [2], [1], "float32", "cpu", 0, 1)
    relu = "relu = torch.ops.aten.relu.default(x)"

    def carried(config=None, graph=relu, specs=(plain_spec,)):
        how = plan.repro(accuracy, "inductor", config or {}, specs=list(specs), graph=graph)
        return closure([(plan.ANSWER, "main"), *how.values()], docstrings=False).source()

    text = carried()
    assert "def run_float64_cast(" in text and "def make_uniform_inputs(" in text and "def _drawn(" not in text
    for absent in ("class installed_decompositions", "def float64_mode(", "def _tensor(", "def make_inputs("):
        assert absent not in text, absent
    assert "class installed_decompositions" in carried({"torch._inductor.decomposition": {"aten.silu.default": 0}})
    assert "def float64_mode(" in carried(graph="x = torch.ops.aten._to_copy.default(y, dtype=torch.float32)")
    assert "def float64_mode(" in carried(graph="torch.ops.higher_order.while_loop(cond, body, (x,), ())")
    offset = carried(specs=[(*plain_spec, None, {"offset": 1, "storage": 3})])
    assert "def make_laid_inputs(" in offset and "def _drawn(" in offset and "def make_inputs(" not in offset
    assert "def under_autocast(" not in text  # a call under no torch.autocast carries none of it; one under it does
    under = plan.repro({**accuracy, "autocast": [{"device_type": "cpu", "dtype": "bfloat16"}]}, "inductor", {})
    assert "def under_autocast(" in closure([(plan.ANSWER, "main"), *under.values()], docstrings=False).source()
