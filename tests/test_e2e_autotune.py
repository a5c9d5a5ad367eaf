"""capture | kdiff on a max-autotune script: kdiff reuses what the script autotuned, and says so (issue 59, part 3).

One capture of a real ``torch.compile(mode="max-autotune")`` script on the CPU (Inductor's C++ GEMM template
autotunes the bmm against ATen's) in a cache folder of the test's own; kdiff compiles the captured graph as
the script did, in that folder: the one the capture recorded (``captured.cache_dir``) where kdiff's own
environment names none, else the environment's (the user's choice wins, and kdiff says the script's was elsewhere).
The script's second graph, compiled with ``mode="reduce-overhead"``, keeps that mode: kdiff says how many graphs
CUDA graphs wrapped (none on the CPU).
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap

import pytest

from pt2kit.testkit import module, run

pytestmark = pytest.mark.xdist_group("autotune_reuse")

SCRIPT = textwrap.dedent("""\
    import torch

    def f(a, b):
        return torch.relu(torch.bmm(a, b)) * 2

    def g(x):
        return torch.sin(x) * 2

    torch.manual_seed(0)
    c = torch.compile(f, mode="max-autotune")
    c(torch.randn(4, 32, 64), torch.randn(4, 64, 48))
    torch.compile(g, mode="reduce-overhead")(torch.randn(8))
""")
# max-autotune's triton.cudagraphs, as reduce-overhead's, wraps no CPU graph: said, so no one reads it as judged
CPU_GRAPH = ("CUDA graphs: 0 of 1 graph wrapped, 1 skipped (a CPU graph, or one Inductor will not record: "
             "TORCH_LOGS=cudagraphs says why)")


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """(folder, the capture's stdout, the script's Inductor cache folder): the script run once under capture."""
    where = tmp_path_factory.mktemp("autotuned")
    (where / "s.py").write_text(SCRIPT)
    cache = where / "inductor"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), PT2KIT_STORE=str(where / "store"))
    r = run(module("pt2kit.runtime", "capture", "--", sys.executable, "s.py"), stdin=b"", env=env, cwd=where, timeout=600)
    assert r.code == 0, r.stderr
    return where, r.stdout, cache


def _graph(captured, i):
    """The capture's stream with its ``i``-th graph alone (0: the max-autotune bmm, 1: the reduce-overhead sin)."""
    header, *models = captured[1].splitlines(keepends=True)
    return header + models[i]


def _kdiff(captured, cache, *args, tool="pt2kit.kdiff", stream=None):
    """kdiff (or ``tool``) on the capture's max-autotune graph (or ``stream``) with TORCHINDUCTOR_CACHE_DIR=``cache``
    (None: unset)."""
    where = captured[0]
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env.update(PT2KIT_STORE=str(where / "store"), **({} if cache is None else {"TORCHINDUCTOR_CACHE_DIR": str(cache)}))
    return run(module(tool, *args), stdin=_graph(captured, 0) if stream is None else stream, env=env, cwd=where,
               timeout=600)


def _verdict(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if "leaves pass" in line)


def test_kdiff_reads_the_scripts_autotuning_back_and_judges_as_without_it(captured, tmp_path):
    reused = _kdiff(captured, None)  # no folder named here: the script's, from its capture
    fresh = _kdiff(captured, tmp_path / "fresh")  # the user's own folder wins, said
    assert (reused.code, fresh.code) == (0, 0), reused.stderr + fresh.stderr
    said = [re.sub(r"in \d+\.\d s:", "in S s:", line) for line in reused.stderr.splitlines() if "as the script was" in line]
    assert said == [f"kdiff: s.py[0/0]: compiled under max_autotune, coordinate_descent_tuning, triton.cudagraphs as "
                    f"the script was, in the script's Inductor cache {captured[2]}, in S s: FX graph cache "
                    "0 hit, 1 miss (torch.backends.cuda.matmul.fp32_precision=ieee is in its key; --precision "
                    "as-configured keeps the script's); max-autotune: 1 matmul selection read from the autotune cache, "
                    f"0 benchmarked afresh; {CPU_GRAPH}"], reused.stderr
    assert (f"as the script was, in Inductor's cache {tmp_path / 'fresh'}, not the script's {captured[2]} "
            "(TORCHINDUCTOR_CACHE_DIR names it), in ") in fresh.stderr, fresh.stderr
    assert re.search(r"max-autotune: 0 matmul selections read from the autotune cache, 1 benchmarked afresh \(shapes "
                     r"the script never autotuned, or a cache folder without its results\)", fresh.stderr), fresh.stderr
    assert _verdict(reused.stderr) == _verdict(fresh.stderr) == "kdiff: s.py[0/0]: 1 of 1 leaves pass (inductor vs " \
        "eager; PyTorch's accuracy-harness precision: TF32 off, Inductor's fallback_random on)"
    assert [d["passed"] for d in reused.kind("diff")] == [d["passed"] for d in fresh.kind("diff")] == [True]


def test_under_the_scripts_own_precision_kdiff_reads_its_compiled_graph_back_whole(captured):
    r = _kdiff(captured, None, "--precision", "as-configured")
    assert r.code == 0, r.stderr
    assert re.search(r"kdiff: s\.py\[0/0\]: compiled under .* as the script was, in the script's Inductor cache .*: "
                     r"FX graph cache 1 hit, 0 miss; max-autotune: nothing autotuned, the compiled graph was read back "
                     r"whole; " + re.escape(CPU_GRAPH) + "$", r.stderr, re.M), r.stderr


def test_a_planted_bug_under_max_autotune_is_found_and_minified_with_the_autotuning_reused(captured):
    r = _kdiff(captured, captured[2], "--config", "cpp.inject_relu_bug_TESTING_ONLY=accuracy")
    assert r.code == 1, r.stderr
    assert "kdiff: s.py[0/0]: FAIL out[0] (inductor vs eager): max abs" in r.stderr, r.stderr
    assert f"first divergence: aten.relu.default (node relu) at {captured[0] / 's.py'}:4" in r.stderr, r.stderr
    assert "max-autotune: 1 matmul selection read from the autotune cache, 0 benchmarked afresh" in r.stderr, r.stderr
    # minify, with no folder named, compiles every run in the script's: what they read back said in one line
    out = captured[0] / "repro.py"
    m = _kdiff(captured, None, "--no-bisect", "-o", str(out), tool="pt2kit.minify", stream=r.stdout)
    assert m.code == 1, m.stderr
    # the script's mode settings the failure does not need: dropped from the repro, and said where it was run
    # under them (issue 59: the repro named only the relu bug's setting)
    (rep,) = m.kind("repro")
    assert rep["config"] == {"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}, rep
    dropped = ("max_autotune=True, coordinate_descent_tuning=True, triton.cudagraphs=True (the failure reproduces "
               "without them)")
    assert f"drop config: dropped {dropped}" in m.stderr, m.stderr
    doc = out.read_text().split('"""')[1]  # the docstring's line, as the reader sees it
    assert ("\nConfig dropped (not needed): max_autotune=True, coordinate_descent_tuning=True, "
            "triton.cudagraphs=True.\n") in doc, doc
    said = [line for line in m.stderr.splitlines() if "as the script was" in line]
    assert len(said) == 1 and re.fullmatch(
        r"minify: s\.py\[0/0\]: the original run, (\d+) candidates?(, \d+ localisations?)? compiled under max_autotune, "
        r"coordinate_descent_tuning, triton\.cudagraphs as the script was, in the script's Inductor cache "
        + re.escape(str(captured[2])) + r", in \d+\.\d s \(the workers' added up\): FX graph cache (\d+) hit, (\d+) miss; "
        r"max-autotune: (nothing autotuned, no matmul was compiled afresh|\d+ matmul selections? read from the autotune "
        r"cache, 0 benchmarked afresh); CUDA graphs: 0 of (\d+) graphs? wrapped, (\d+) skipped \(a CPU graph, or one "
        r"Inductor will not record: TORCH_LOGS=cudagraphs says why\), (\d+) compiled without triton\.cudagraphs \(a "
        r"candidate whose config dropped it\)", said[0]), m.stderr
    # every graph its workers compiled is counted, though each candidate's run resets Dynamo (which empties the trees):
    # those under the script's triton.cudagraphs (the original run's, on the CPU none wrapped) and the candidates' after
    # the config step dropped it, apart
    hits, misses, _, graphs, skipped, off = re.search(
        r"cache (\d+) hit, (\d+) miss; max-autotune: (.*); CUDA graphs: 0 of (\d+) graphs? wrapped, (\d+) skipped .*, "
        r"(\d+) compiled without", said[0]).groups()
    assert int(graphs) == int(skipped) >= 1 and int(off) >= 1 and int(graphs) + int(off) == int(hits) + int(misses), said[0]
    assert "3 -> 1 ops (aten.relu.default)" in m.stderr, m.stderr



def test_reduce_overhead_travels_with_the_graph_and_kdiff_says_what_it_wrapped(captured):
    # the captured graph keeps the script's mode; kdiff compiles under it and says CUDA graphs wrapped none here
    stream = _graph(captured, 1)
    assert json.loads(stream.splitlines()[1])["captured"]["mode"] == "reduce-overhead"
    r = _kdiff(captured, None, stream=stream)
    assert r.code == 0, r.stderr
    said = [re.sub(r"in \d+\.\d s:", "in S s:", line) for line in r.stderr.splitlines() if "compiled under" in line]
    assert said == [f"kdiff: s.py[1/0]: compiled under triton.cudagraphs as the script was, in the script's Inductor "
                    f"cache {captured[2]}, in S s: FX graph cache 0 hit, 1 miss (torch.backends.cuda.matmul.fp32_precision"
                    f"=ieee is in its key; --precision as-configured keeps the script's); {CPU_GRAPH}"], r.stderr
    assert "kdiff: s.py[1/0]: 1 of 1 leaves pass (inductor vs eager" in r.stderr, r.stderr
