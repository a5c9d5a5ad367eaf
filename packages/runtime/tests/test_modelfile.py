from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")

from pt2kit.runtime.common.errors import ModelFileError  # noqa: E402
from pt2kit.runtime.common.modelfile import load_model, model_fields, parse_spec  # noqa: E402


def write(tmp_path, text, name="m.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_module_level_model_and_inputs(tmp_path):
    p = write(tmp_path, """
        import torch
        model = torch.nn.Linear(4, 3)
        example_inputs = (torch.randn(2, 4),)
    """)
    m = load_model(str(p))
    assert m.label == "m.py" and m.entry is None and m.file == p.resolve()
    assert m.call().shape == (2, 3)
    f = model_fields(m, "cpu", {"a": "1"})
    assert f["inputs"][0].name == "inputs[0]" and f["inputs"][0].shape == [2, 4]
    assert f["parameters"] == 15 and f["trainable"] == 15 and f["config"] == {"a": "1"}
    # a piped record's label (a graph `pt2kit capture` took names its script, not its hashed file)
    named = load_model(str(p), label="train.py[0/1]")
    assert named.label == "train.py[0/1]" and model_fields(named, "cpu", {})["model"] == "train.py[0/1]"


def test_factory_and_kwargs_and_sibling_import(tmp_path):
    write(tmp_path, "SCALE = 3\n", name="helper.py")
    p = write(tmp_path, """
        import torch
        from helper import SCALE
        def small():
            return (lambda x, y: x * SCALE + y), {"x": torch.ones(2), "y": torch.ones(2)}
    """)
    m = load_model(f"{p}:small")
    assert m.kwargs and m.label == "m.py:small" and m.call().tolist() == [4.0, 4.0]


@pytest.mark.parametrize(
    "text,spec_suffix,message",
    [
        ("import torch\nmodel = torch.nn.ReLU()\n", "", "defines no `example_inputs`"),
        ("x = 1\n", "", "defines no `model` or `example_inputs`"),
        ("def f(:\n  pass\n", "", ":1: syntax error:"),
        ("import torch\nmodel = torch.nn.ReLU()\nexample_inputs = 3\n", "", "example_inputs must be a tuple"),
        ("raise ValueError('no weights')\n", "", ":1: loading the model file raised ValueError: no weights"),
        ("def f():\n    return 1\n", ":f", "`f()` must return (model, example_inputs)"),
        ("x = 1\n", ":nope", "defines no `nope`"),
    ],
)
def test_bad_model_files_get_one_line(tmp_path, text, spec_suffix, message):
    p = write(tmp_path, text)
    with pytest.raises(ModelFileError) as e:
        load_model(str(p) + spec_suffix)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(ModelFileError, match="no such model file"):
        load_model(str(tmp_path / "nope.py"))


def test_parse_spec():
    assert parse_spec("a/b.py:make")[1] == "make"
    assert parse_spec("a/b.py")[1] is None
    assert parse_spec("C:/x/b.py")[1] is None  # a drive letter is no entry point


def test_device_move_and_bad_device(tmp_path):
    p = write(tmp_path, "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = (torch.ones(1, 2),)\n")
    m = load_model(str(p), device="cpu")
    assert m.inputs[0].device.type == "cpu"
    with pytest.raises(ModelFileError, match="--device banana"):
        load_model(str(p), device="banana")


def test_a_backend_file_whose_top_level_raises_is_named_as_the_backend_file_with_the_guard_to_add(tmp_path):
    """A file handed over as --backend FILE.py:NAME whose top level raises (a definition of it: a script's
    own run no longer runs, pt2kit.runtime.common.toplevel refuses it first): the error said "loading the model
    file raised", of a file that was no model file."""
    from pt2kit.runtime.common.pyfile import backend_callable

    f = tmp_path / "train.py"
    f.write_text("def fast(gm, example_inputs):\n    return gm\n\nSTEPS = int('the training loop failed')\n")
    with pytest.raises(ModelFileError) as e:
        backend_callable(f"{f}:fast", "--backend")
    assert str(e.value) == (f"{f}:4: loading train.py for --backend raised ValueError: invalid literal for int() "
                            "with base 10: 'the training loop failed' "
                            "(its top level runs when --backend loads it for fast: put the script's own run under "
                            "`if __name__ == \"__main__\":`, or the backend in a file of its own)")


def test_a_model_file_called_under_its_autocast_state_gives_the_dtypes_the_script_saw(tmp_path):
    # what `pt2kit capture` writes for a graph the script called inside `with torch.autocast(...)`: the
    # graph's linear is a bfloat16 op only under it (before, every tool called it in float32, and capture's
    # own check said "output 0 is float32[2, 3], the graph gave bfloat16[2, 3]")
    p = write(tmp_path, """
        import torch
        model = torch.nn.Linear(4, 3)
        example_inputs = (torch.randn(2, 4),)
        autocast_state = [{'device_type': 'cpu', 'dtype': 'bfloat16', 'cache_enabled': True}]
    """)
    m = load_model(str(p))
    assert m.call().dtype == torch.bfloat16 and m.call(inputs=(torch.randn(1, 4),)).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")  # entered around the call only
    (a,) = model_fields(m, "cpu", {})["autocast"]
    assert (a.device_type, a.dtype, a.cache_enabled) == ("cpu", "bfloat16", True)
    with m.ambient():  # nested autocast, the inner one's float16, read back as the boot reads it
        with torch.autocast("cpu", dtype=torch.float16, cache_enabled=False):
            from pt2kit_portable import autocast_now

            assert autocast_now() == [{"device_type": "cpu", "dtype": "float16", "cache_enabled": False}]
        from pt2kit_portable import autocast_now

        assert autocast_now() == [{"device_type": "cpu", "dtype": "bfloat16", "cache_enabled": True}]
        with torch.autocast("cpu", enabled=False):
            assert autocast_now() == []
        from pt2kit_portable import autocast_off

        with autocast_off():  # a training step's backward, outside the forward's autocast as the script's is
            assert autocast_now() == [] and not torch.is_autocast_enabled("cpu")
        assert torch.is_autocast_enabled("cpu")
    plain = write(tmp_path, "import torch\nmodel = torch.nn.Linear(4, 3)\nexample_inputs = (torch.randn(2, 4),)\n",
                  name="plain.py")
    assert load_model(str(plain)).call().dtype == torch.float32 and model_fields(load_model(str(plain)), "cpu", {})[
        "autocast"] == []


def test_a_bad_autocast_state_is_one_line(tmp_path):
    p = write(tmp_path, """
        import torch
        model = torch.nn.Linear(4, 3)
        example_inputs = (torch.randn(2, 4),)
        autocast_state = [{'device_type': 'cpu', 'dtype': 'int8'}]
    """)
    with pytest.raises(ModelFileError) as e:
        load_model(str(p))
    assert str(e.value).startswith(f"{p.resolve()}: autocast_state: {{'device_type': 'cpu', 'dtype': 'int8'}}: no "
                                   "autocast of that device type, dtype or cache flag") and "\n" not in str(e.value)
