"""pt2kit.runtime.common.caches: the folder a tool's workers compile a captured graph in, and the modes it reads."""

from __future__ import annotations

import os
from pathlib import Path

from pt2kit.runtime.common.caches import CacheUse, folder_said, modes_in, script_env
from pt2kit.runtime.parent.child import run_in_child

HERE = Path(__file__).parent


def _worker_folder(tmp_path, env_folder, script_folder):
    """The folder a worker compiles a piped graph in: started with TORCHINDUCTOR_CACHE_DIR=``env_folder``
    (None: unset), its job naming the script's ``script_folder``."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env.update(PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
               **({"TORCHINDUCTOR_CACHE_DIR": env_folder} if env_folder else {}))
    res = run_in_child("child_targets:cache_folder", {"script_cache": script_folder, "cache_given": False},
                       run="run-7", store=str(tmp_path), on_record=lambda r: None, quiet=True, env=env)
    assert res.ok, res
    return res.value


def test_a_worker_compiles_in_the_scripts_folder_unless_it_was_started_in_one_of_its_own(tmp_path):
    script = tmp_path / "script"
    script.mkdir()
    assert _worker_folder(tmp_path, None, str(script)) == str(script)
    # benchrun starts its cold run in a fresh folder of its own: never the script's
    assert _worker_folder(tmp_path, str(tmp_path / "cold"), str(script)) == str(tmp_path / "cold")


def test_the_scripts_folder_is_used_only_where_the_tools_environment_names_none_and_it_is_there(tmp_path):
    env = {"PATH": "/bin"}
    assert script_env(str(tmp_path), False, env) == {"PATH": "/bin", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    assert script_env(str(tmp_path), True, env) is None  # TORCHINDUCTOR_CACHE_DIR set for the tool: the user's
    assert script_env(str(tmp_path / "gone"), False, env) is None
    assert script_env(None, False, env) is None


def test_the_line_says_whose_folder_it_was(tmp_path):
    assert folder_said(str(tmp_path), str(tmp_path), False) == f"in the script's Inductor cache {tmp_path}"
    assert folder_said("/c", str(tmp_path), True) == (f"in Inductor's cache /c, not the script's {tmp_path} "
                                                      "(TORCHINDUCTOR_CACHE_DIR names it)")
    assert folder_said("/c", "/old", False) == "in Inductor's cache /c, not the script's /old (it is gone)"
    assert folder_said("/c", None, False) == "in Inductor's cache /c"


def test_modes_are_read_from_a_resolved_config_without_torch():
    config = {"torch._inductor.config": {"max_autotune": "True", "coordinate_descent_tuning": "False",
                                         "triton.cudagraphs": "True"}, "torch._dynamo.config": {"max_autotune": "True"}}
    assert modes_in(config) == ["max_autotune", "triton.cudagraphs"]
    assert modes_in({}) == []


def test_the_line_says_as_the_script_was_only_where_a_capture_named_the_script():
    # kdiff or minify on a model file named on the command line: no script, its modes are as configured
    def line(script):
        used = CacheUse({"torch.backends.cuda.matmul.fp32_precision": "ieee"}, script)
        used.folder = "/c"
        used.add({"grew": {"fxgraph_cache_miss": 1}, "seconds": 2.0})
        return used.line(["triton.cudagraphs"])

    tail = ("in 2.0 s: FX graph cache 0 hit, 1 miss (torch.backends.cuda.matmul.fp32_precision=ieee is in its key; "
            "--precision as-configured keeps {}); CUDA graphs: 0 of 1 graph wrapped, 1 skipped (a CPU graph, or one "
            "Inductor will not record: TORCH_LOGS=cudagraphs says why)")
    assert line("/c") == ("compiled under triton.cudagraphs as the script was, in the script's Inductor cache /c, "
                          + tail.format("the script's"))
    assert line(None) == ("compiled under triton.cudagraphs as configured, in Inductor's cache /c, "
                          + tail.format("the configured ones"))


def test_graphs_a_candidate_compiled_without_cuda_graphs_are_counted_apart_from_those_they_skipped():
    # minify on an H200: the original run's 2 graphs wrapped, 12 candidates' compiled after the config step dropped
    # triton.cudagraphs read "12 skipped (a CPU graph, ...)", which none of them was
    original, candidate = CacheUse({}), CacheUse({})
    original.grew.update(fxgraph_cache_miss=2, cudagraph_wrapped=2)
    candidate.grew.update(fxgraph_cache_hit=2, fxgraph_cache_miss=10)
    candidate.compiled_without_cudagraphs()
    used = CacheUse({}, "/c")
    used.folder = "/c"
    for block in (original, candidate):
        used.add(block.counts())
    assert used.line(["triton.cudagraphs"], "12 compiled", workers=True).endswith(
        "FX graph cache 2 hit, 12 miss; CUDA graphs: 2 of 2 graphs wrapped, 12 compiled without triton.cudagraphs (a "
        "candidate whose config dropped it)")
