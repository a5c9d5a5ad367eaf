from __future__ import annotations

import os

import pytest

from pt2kit.runtime.common.config import parse_config
from pt2kit.runtime.common.errors import UsageError


def test_parse_needs_key_and_value():
    assert parse_config(["a.b=1", "c= x "]) == {"a.b": "1", "c": "x"}
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_config(["novalue"])


def test_apply_sets_and_restores_inductor_and_dynamo_settings():
    torch = pytest.importorskip("torch")
    import torch._dynamo.config as dc
    import torch._inductor.config as ic

    from pt2kit.runtime.common.config import apply_config

    assert torch
    before = ic.cpp.inject_relu_bug_TESTING_ONLY
    with apply_config({"cpp.inject_relu_bug_TESTING_ONLY": "accuracy", "dynamo.assume_static_by_default": "false",
                       "inductor.max_autotune": "1"}):
        assert ic.cpp.inject_relu_bug_TESTING_ONLY == "accuracy"
        assert dc.assume_static_by_default is False and ic.max_autotune is True
    assert ic.cpp.inject_relu_bug_TESTING_ONLY == before and dc.assume_static_by_default is True


def test_unknown_key_suggests_close_ones():
    pytest.importorskip("torch")
    from pt2kit.runtime.common.config import apply_config

    with pytest.raises(UsageError, match=r"no such setting.*did you mean cpp.inject_relu_bug_TESTING_ONLY"):
        apply_config({"cpp.inject_relu_bug_TESTING": "accuracy"})
    with pytest.raises(UsageError, match="expected a boolean"):
        apply_config({"max_autotune": "maybe"})


def test_config_keys_lists_dotted_names():
    pytest.importorskip("torch")
    import torch._inductor.config as ic

    from pt2kit.runtime.common.config import config_keys

    assert "cpp.inject_relu_bug_TESTING_ONLY" in config_keys(ic)


@pytest.mark.parametrize(("key", "raw", "message"), [
    ("reorder_for_compute_comm_overlap_passes", "3", "expected a list"),       # a list setting given an int
    ("reorder_for_compute_comm_overlap_passes", "'abc'", "expected a list"),   # ... or a string
    ("aot_inductor.metadata", "[1, 2]", "expected a dict"),                    # a dict setting given a list
    ("dynamo.reorderable_logging_functions", "{'a': 1}", "expected a set"),    # a set setting given a dict
    ("reorder_for_compute_comm_overlap_passes", "[1,", "expected a Python list literal"),
    ("max_autotune_gemm_search_space", "x", None),                             # str settings take any text
    ("compile_threads", "nan", "expected a int"),
    ("inductor.fx_passes_numeric_check", "nan", "expected a Python dict literal"),
])
def test_wrong_type_for_container_settings_is_one_line(key, raw, message):
    pytest.importorskip("torch")
    from pt2kit.runtime.common.config import resolve

    if message is None:
        assert resolve({key: raw})[0][2] == raw
        return
    with pytest.raises(UsageError, match=message) as e:
        resolve({key: raw})
    assert "\n" not in str(e.value) and str(e.value).startswith(f"--config {key}=")


@pytest.mark.parametrize("value", [
    ("/usr/bin/g++",), (None, "g++"), (), [1, (2, 3)], {"a": (1,), "b": [None]}, set(), {"x", "y"},
    float("inf"), -float("inf"), [float("inf")], 0.1, -0, "it's", True, None, 10**30,
])
def test_a_value_comes_back_from_its_literal_text_with_its_types(value):
    from pt2kit.runtime.common.config import from_literal, literal

    back = from_literal(literal(value))

    def shape(v):  # the value with every container's type made visible
        if isinstance(v, list | tuple):
            return (type(v).__name__, [shape(x) for x in v])
        if isinstance(v, dict):
            return ("dict", {k: shape(x) for k, x in v.items()})
        return (type(v).__name__, v)

    assert shape(back) == shape(value)


def test_a_tuple_setting_from_the_command_line_crosses_to_a_worker_as_a_tuple():
    pytest.importorskip("torch")
    import msgspec

    from pt2kit.runtime.common.config import from_literal, literal, resolve

    (_, key, value), = resolve({"cpp.cxx": "('/usr/bin/g++',)"})
    assert key == "cpp.cxx" and value == ("/usr/bin/g++",)
    wire = msgspec.json.decode(msgspec.json.encode({key: literal(value)}))  # as minify's workers get it
    assert from_literal(wire[key]) == ("/usr/bin/g++",) and isinstance(from_literal(wire[key]), tuple)


def test_worker_settings_are_what_the_process_has_whoever_set_them(tmp_path):
    """A model file's module-level setting, an environment variable's and --config's all come back as
    --config text that apply_config takes; a setting put back to its default, a callable and the
    machine-specific compile_threads do not."""
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    model = tmp_path / "m.py"
    model.write_text("import torch\n"
                     "torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = 'accuracy'\n"
                     "torch._inductor.config.cpp.cxx = ('/usr/bin/g++',)\n"  # a tuple: its literal text
                     "torch._functorch.config.joint_custom_pass = print\n"  # a callable: not text
                     "torch._dynamo.config.cache_size_limit = 3\n"
                     "torch._dynamo.config.cache_size_limit = torch._dynamo.config.cache_size_limit * 0 + 8\n")
    code = ("import json\n"
            "from pt2kit.runtime.common.config import apply_config, kept_settings, worker_settings\n"
            "from pt2kit.runtime.common.modelfile import exec_file\n"
            "from pathlib import Path\n"
            "import torch._inductor.config as ic\n"
            "with kept_settings():\n"
            "    with apply_config({'fx.use_duck_shape': 'false'}):\n"
            f"        exec_file(Path({str(model)!r}))\n"
            "        had = worker_settings()\n"
            "print(json.dumps([had, worker_settings(), ic.cpp.inject_relu_bug_TESTING_ONLY]))\n")
    env = {**os.environ, "TORCHINDUCTOR_USE_TORCH_PROFILER_BENCHMARKER": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    import json

    had, after, relu = json.loads(p.stdout.splitlines()[-1])
    assert had == {"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy", "inductor.use_torch_profiler_benchmarker": "True",
                   "fx.use_duck_shape": "False", "inductor.cpp.cxx": "('/usr/bin/g++',)"}
    assert after == {"inductor.use_torch_profiler_benchmarker": "True"}  # the file's settings put back; the environment's stay
    assert relu is None
    from pt2kit.runtime.common.config import resolve

    assert {(k, v, type(v)) for _, k, v in resolve(had)} == {
        ("cpp.inject_relu_bug_TESTING_ONLY", "accuracy", str), ("use_torch_profiler_benchmarker", True, bool),
        ("use_duck_shape", False, bool), ("cpp.cxx", ("/usr/bin/g++",), tuple)}


def test_every_debug_writer_is_a_setting_of_this_torch_and_points_into_the_store(tmp_path, monkeypatch):
    """DEBUG_WRITERS names real settings (a rename in torch fails here, not silently in a user's cwd); one
    turned on puts torch's debug folder under the store, unless the settings or the environment chose it."""
    pytest.importorskip("torch")
    import torch._dynamo.config as dc
    from torch._dynamo.utils import get_debug_dir

    from pt2kit.runtime.common.config import DEBUG_WRITERS, apply_config, resolve

    for name, keys in DEBUG_WRITERS.items():
        assert len(resolve({f"{name}.{k}": "1" if k != "repro_after" else "aot" for k in keys})) == len(keys)
    monkeypatch.setenv("PT2KIT_STORE", str(tmp_path / "store"))
    monkeypatch.delenv("TORCH_COMPILE_DEBUG_DIR", raising=False)
    before = dc.debug_dir_root
    with apply_config({"inductor.trace.enabled": "true"}):
        assert get_debug_dir().startswith(str(tmp_path / "store" / "torch_compile_debug") + "/")
    with apply_config({"dynamo.repro_after": "aot"}):
        assert dc.debug_dir_root == str(tmp_path / "store" / "torch_compile_debug")
    assert dc.debug_dir_root == before
    with apply_config({"inductor.trace.enabled": "false", "inductor.max_autotune": "true"}):
        assert dc.debug_dir_root == before
    with apply_config({"inductor.trace.enabled": "true", "dynamo.debug_dir_root": str(tmp_path / "mine")}):
        assert dc.debug_dir_root == str(tmp_path / "mine")  # the user's choice
    monkeypatch.setenv("TORCH_COMPILE_DEBUG_DIR", str(tmp_path / "env"))
    with apply_config({"inductor.trace.enabled": "true"}):
        assert dc.debug_dir_root == before


def test_inf_and_nan_settings_come_back_from_the_collector_as_they_were():
    """A setting the script made inf (alone, or NaN inside a dict) is collected as text that applies back as
    the same value: repr's 'inf' and 'nan' are no literals, and were dropped where the text was read back."""
    torch = pytest.importorskip("torch")
    import math

    from pt2kit.runtime.common.config import apply_config, worker_settings

    dyn, ind = torch._dynamo.config, torch._inductor.config
    check = {**ind.fx_passes_numeric_check, "precision": math.nan}
    with dyn.patch(repro_tolerance=math.inf), ind.patch(fx_passes_numeric_check=check, cpu_gpu_bw=-math.inf):
        got = worker_settings()
    assert got["dynamo.repro_tolerance"] == "1e999" and got["inductor.cpu_gpu_bw"] == "-1e999"
    assert "'precision': float('nan')" in got["inductor.fx_passes_numeric_check"]
    with apply_config({k: got[k] for k in ("dynamo.repro_tolerance", "inductor.cpu_gpu_bw",
                                           "inductor.fx_passes_numeric_check")}):
        assert dyn.repro_tolerance == math.inf and ind.cpu_gpu_bw == -math.inf
        back = ind.fx_passes_numeric_check
        assert math.isnan(back["precision"]) and {k: v for k, v in back.items() if k != "precision"} == \
            {k: v for k, v in check.items() if k != "precision"}


_VECTORISED = """
import torch
torch.compile(lambda x: torch.cos(torch.relu(x)))(torch.randn(64, 64))
"""
_RECORD_THEN_OWN = """
import torch
from pt2kit.runtime.common.config import apply_config
with apply_config({"inductor.cpp.vec_isa_ok": "False"}):  # a record's settings (PyTorch's minifier tests')
    torch.compile(lambda x: x.sin())(torch.randn(64, 64))
torch._dynamo.reset()
torch.compile(lambda x: torch.cos(torch.relu(x)))(torch.randn(64, 64))  # settings put back: its cached graph
print("compiled")
"""


def test_a_graph_compiled_after_a_records_vec_isa_setting_is_put_back_builds(tmp_path):
    """Issue 44 item 8: Inductor picks its vector ISA once a process. Picked under a record's
    ``cpp.vec_isa_ok=False``, it stayed none after the setting was put back: a graph another process had
    stored vectorised in the shared Inductor cache was then built without the vector header, and the
    tool crashed where the script ran ("'at::vec' has not been declared")."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    first = subprocess.run([sys.executable, "-c", _VECTORISED], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-2000:]
    p = subprocess.run([sys.executable, "-c", _RECORD_THEN_OWN], env=env, capture_output=True, text=True)
    assert "at::vec" not in p.stderr and p.returncode == 0 and p.stdout.strip() == "compiled", p.stderr[-2000:]


def test_a_hook_setting_takes_code_from_the_command_line_as_a_backend_file_is_loaded(tmp_path):
    # --config post_grad_custom_post_pass=FILE.py:NAME hands the script's pass over: the function itself is
    # set, the file run as a module (its __main__ block not run)
    import torch._inductor.config as inductor

    from pt2kit.runtime.common.config import apply_config

    f = tmp_path / "planted.py"
    f.write_text("RAN = []\ndef corrupt(graph):\n    RAN.append(graph)\n"
                 "if __name__ == '__main__':\n    raise SystemExit('the script ran')\n")
    with apply_config({"post_grad_custom_post_pass": f"{f}:corrupt"}):
        hook = inductor.post_grad_custom_post_pass
        assert callable(hook) and hook.__name__ == "corrupt"
    assert inductor.post_grad_custom_post_pass is None
    with pytest.raises(UsageError, match=r"post_grad_custom_post_pass holds code; give FILE.py:NAME"):
        apply_config({"inductor.post_grad_custom_post_pass": "corrupt"})
    with pytest.raises(UsageError, match=r"`nothing` is not a callable function or pass object"):
        apply_config({"joint_custom_post_pass": f"{f}:nothing"})
