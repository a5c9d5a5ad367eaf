"""The trust model: a stream names a .py model file and safe settings; it never runs anything else."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest

from pt2kit.runtime.common.errors import ModelFileError, UsageError
from pt2kit.runtime.common.modelfile import load_model
from pt2kit.runtime.parent.trust import check_model_file, stream_config_for, unsafe_config_reason

MODEL = "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = (torch.ones(1, 2),)\n"


@pytest.mark.parametrize(("key", "value"), [
    ("cpp.cxx", "('/tmp/evil.sh',)"), ("cpp.cxx", "sh"), ("inductor.cpp.cxx", "g++"), ("cuda.cuda_cxx", "nvcc"),
    ("aot_inductor.output_path", "x.so"), ("trace.debug_dir", "d"), ("dynamo.debug_dir_root", "d"),
    ("global_cache_dir", "d"), ("cuda.compile_opt_level", "-fplugin=x.so"), ("cpp.march", "native"),
    ("fx_graph_remote_cache", "true"), ("autotune_remote_cache", "1"), ("post_grad_custom_pre_pass", "'m.f'"),
    ("inductor_choices_class", "'mod.Cls'"), ("aot_inductor.custom_op_libs", "['evil']"),
    ("worker_start_method", "fork"), ("external_matmul", "['x']"), ("some.new_cmd", "rm"),
    ("any_new_setting", "/usr/bin/evil"), ("any_new_setting", "-Wl,--wrap"), ("any_new_setting", "C:\\\\evil"),
])
def test_settings_that_name_programs_paths_or_hooks_are_refused(key, value):
    assert unsafe_config_reason(key, value)
    with pytest.raises(UsageError) as e:
        stream_config_for({key: value}, {}, "s.ndjson:3")
    msg = str(e.value)
    assert msg.startswith(f"s.ndjson:3: the model record sets --config {key},") and "--no-config-from-stream" in msg


@pytest.mark.parametrize(("key", "value"), [
    ("cpp.inject_relu_bug_TESTING_ONLY", "accuracy"), ("max_autotune", "true"), ("capture_scalar_outputs", "1"),
    ("fallback_random", "True"), ("dynamo.recompile_limit", "16"), ("fx_graph_remote_cache", "false"),
    ("triton.cudagraphs", "0"), ("max_autotune_gemm_backends", "ATEN,TRITON"), ("emulate_precision_casts", "1"),
])
def test_plain_settings_pass(key, value):
    assert unsafe_config_reason(key, value) is None
    assert stream_config_for({key: value}, {}, "-:1") == {key: value}


def test_command_line_key_allows_and_overrides_the_streams():
    got = stream_config_for({"cpp.cxx": "/evil", "max_autotune": "1"}, {"cpp.cxx": "g++"}, "-:1")
    assert got == {"cpp.cxx": "g++", "max_autotune": "1"}
    assert stream_config_for({"cpp.cxx": "/evil"}, {"x": "1"}, "-:1", use=False) == {"x": "1"}


def test_only_existing_py_files_outside_python_installations(tmp_path):
    good = tmp_path / "m.py"
    good.write_text(MODEL)
    assert check_model_file(str(good), None, "-:1") == str(good)
    assert check_model_file(str(good), "make", "-:1") == f"{good}:make"
    for name in ("evil.so", "evil.pyc", "evil", "m.py.so"):
        (tmp_path / name).write_bytes(b"\x7fELF")
        with pytest.raises(UsageError, match=r"not a \.py file"):
            check_model_file(str(tmp_path / name), None, "-:1")
    with pytest.raises(UsageError, match="no such model file"):
        check_model_file(str(tmp_path / "gone.py"), None, "-:1")
    (tmp_path / "d.py").mkdir()
    with pytest.raises(UsageError, match="no such model file"):
        check_model_file(str(tmp_path / "d.py"), None, "-:1")
    with pytest.raises(UsageError, match="not a Python name"):
        check_model_file(str(good), "a;b", "-:1")
    os_py = os.path.join(sysconfig.get_paths()["stdlib"], "os.py")
    with pytest.raises(UsageError, match="part of a Python installation"):
        check_model_file(os_py, "abort", "-:1")
    site = Path(sysconfig.get_paths()["purelib"])
    some = next(iter(site.glob("*.py")), None) or next(site.rglob("*.py"))
    with pytest.raises(UsageError, match="part of a Python installation"):
        check_model_file(str(some), None, "-:1")


def test_from_stream_the_entry_is_a_function_defined_in_the_file(tmp_path):
    (tmp_path / "helpers.py").write_text("def make():\n    raise SystemExit('helper ran')\n")
    f = tmp_path / "m.py"
    f.write_text(MODEL + "from os import getcwd\nfrom helpers import make\nclass C:\n    pass\n"
                 "def real():\n    return model, example_inputs\n")
    assert load_model(f"{f}:real", from_stream=True).label == "m.py:real"
    for entry in ("getcwd", "make", "C"):
        with pytest.raises(ModelFileError, match=f"`{entry}` is not a function defined in this file"):
            load_model(f"{f}:{entry}", from_stream=True)


def test_a_binary_named_py_is_never_run_as_an_extension_or_bytecode(tmp_path):
    so = tmp_path / "ext.py"
    so.write_bytes(Path(sys.executable).read_bytes()[:4096])  # an ELF file under a .py name
    with pytest.raises(ModelFileError, match=r"not Python source|syntax error"):
        load_model(str(so))
    pyc = tmp_path / "cached.py"
    import importlib.util
    src = tmp_path / "src.py"
    src.write_text("raise SystemExit('bytecode ran')\n")
    import py_compile
    pyc.write_bytes(Path(py_compile.compile(str(src), cfile=str(tmp_path / "x.pyc"))).read_bytes())
    assert importlib.util.MAGIC_NUMBER == pyc.read_bytes()[:4]
    with pytest.raises(ModelFileError, match=r"not Python source|syntax error"):
        load_model(str(pyc))


def test_a_link_is_judged_by_the_file_it_resolves_to(tmp_path):
    evil = tmp_path / "evil.txt"
    evil.write_text(MODEL)
    (tmp_path / "sneaky.py").symlink_to(evil)
    with pytest.raises(UsageError) as e:
        check_model_file(str(tmp_path / "sneaky.py"), None, "-:3")
    assert str(e.value) == (f"-:3: the model record names {tmp_path / 'sneaky.py'} (which resolves to {evil}), "
                            "not a .py file: a stream runs only Python source")
    os_py = os.path.realpath(os.path.join(sysconfig.get_paths()["stdlib"], "os.py"))
    (tmp_path / "mine.py").symlink_to(os_py)
    with pytest.raises(UsageError, match=r"mine\.py \(which resolves to .*os\.py\) is part of a Python installation"):
        check_model_file(str(tmp_path / "mine.py"), None, "-:4")
    real = tmp_path / "real.py"
    real.write_text(MODEL)
    (tmp_path / "alias.py").symlink_to(real)  # a link to a .py file is a .py file
    assert check_model_file(str(tmp_path / "alias.py"), None, "-:5") == str(tmp_path / "alias.py")


def test_a_store_blob_model_file_must_hash_to_its_name(tmp_path):
    from pt2kit.schema import Store

    store = Store(tmp_path / "store")
    ref = store.put(MODEL.encode(), "text/x-python", ".py")
    path = store.path(ref)
    assert check_model_file(str(path), None, "-:2") == str(path)  # as capture stored it
    path.write_text(MODEL + "import os; os.system('evil')\n")  # edited after capture
    with pytest.raises(UsageError) as e:
        check_model_file(str(path), None, "-:3")
    assert str(e.value) == (f"-:3: {path} is a store blob whose bytes do not hash to its name: the model file was "
                            "changed after it was stored")
