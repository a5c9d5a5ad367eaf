"""pt2kit capture on real scripts, written as users write them (scripts/): the boot and the parent together.
One capture per script, shared by the asserts that read its stream."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pt2kit.schema import decode

SCRIPTS = Path(__file__).with_name("scripts")
pytestmark = pytest.mark.xdist_group("capture-scripts")


def capture(store: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "pt2kit.capture", "--store", str(store), *args], capture_output=True,
                          cwd=SCRIPTS, env=None if env is None else {**os.environ, **env})


def free_port() -> str:
    """A port no other run holds now: spawn.py's rendezvous (a fixed one clashed with a concurrent run)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def records(out: bytes) -> list:
    return [decode(line) for line in out.splitlines()]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("store")


@pytest.fixture(scope="module")
def generate(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    r = subprocess.run([sys.executable, "-m", "pt2kit.capture", "--store", str(store), "--out", str(out / "run.ndjson"),
                        "--values", "all", "--", sys.executable, "generate.py", str(out / "seen.pt")],
                       capture_output=True, cwd=SCRIPTS, env={**os.environ, "BACKEND": "eager"})
    return r, records((out / "run.ndjson").read_bytes()), out / "seen.pt"


def test_generate_on_a_compiled_gpt2_is_a_graph_per_recompile_each_giving_the_scripts_logits(generate):
    import torch

    from pt2kit.runtime.common.modelfile import load_model

    r, (_, *models), seen = generate
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"generated [") and r.stdout.count(b"\n") == 1  # --out: the script's stdout is its own
    # the prompt, the first step with a cache, then the cache's length made dynamic: what the script compiles
    # without capture too (reading a SymInt input must not guard on it: that was a 4th compile)
    assert [m.model for m in models] == ["generate.py[0/0]", "generate.py[0/1]", "generate.py[0/2]"]
    assert {(m.captured.backend, m.captured.values) for m in models} == {("eager", "all")}
    assert not any(m.captured.grad for m in models) and all(m.captured.trace is not None for m in models)
    assert [i.name for i in models[0].inputs] == ["L_kwargs_input_ids_", "L_kwargs_position_ids_",
                                                  "L_kwargs_attention_mask_"]
    assert (models[0].parameters, models[0].frozen) == (16992, 0)  # GPT-2's weights: parameters of the model file
    assert [[i.shape for i in m.inputs if i.name == "L_kwargs_input_ids_"] for m in models] == [[[1, 5]], [[1, 1]], [[1, 1]]]
    logits = torch.load(seen, weights_only=True)
    assert len(logits) == 4  # one compiled call per generated token; graph i was compiled for call i
    for m, want in zip(models, logits, strict=False):
        loaded = load_model(m.file)
        assert torch.equal(loaded.call()[-1], want), m.model


def test_a_segfault_after_the_first_compiled_call_keeps_that_graph(store):
    r = capture(store, "--", sys.executable, "loop.py", "segv")
    assert r.returncode == 139, r.stderr
    _, model, crash = records(r.stdout)
    assert model.model == "loop.py[0/0]" and Path(model.file).is_file()
    assert (crash.signal, crash.exitcode) == ("SIGSEGV", -11)
    assert r.stderr.endswith(b"capture: the command was killed by SIGSEGV (exit 139)\ncapture: 1 graph from 1 process\n")


def test_a_workers_segfault_in_compiled_code_names_the_workers_graph_though_the_command_exits_1(store):
    """The worker's exit status is its launcher's (here the script's main process; torchrun, mp.spawn), never
    capture's: the crash record named no graph, only "the command exited with code 1"."""
    r = capture(store, "--", sys.executable, "worker_segv.py")
    assert r.returncode == 1 and b"worker exit code -11" in r.stderr, r.stderr
    _, model, *crashes = records(r.stdout)
    assert model.model == "worker_segv.py[0/0]"
    assert [(c.model, c.stage, c.signal, c.step, c.exitcode) for c in crashes] == [
        ("worker_segv.py[0/0]", "run", "SIGSEGV", 1, None), (None, "run", None, None, 1)]
    assert b"capture: worker_segv.py[0/0]: killed by SIGSEGV in its compiled forward at call 1\n" in r.stderr


def test_a_later_call_of_a_graph_made_dynamic_is_kept_with_its_own_batch_and_runs_here(store):
    """Automatic dynamic recompiles the graph with a symbolic batch; its second call (batch 6) raises. The
    `@step2` model file holds that call's inputs and gives a [6, 2] output: its run check compared that
    with the compile's example ([4, 2]) and called it "does not run here", so kdiff and minify could not
    judge it."""
    from pt2kit.runtime.common.modelfile import load_model
    from pt2kit.schema import Crash, Model

    r = capture(store, "--", sys.executable, "dynamic_later.py")
    assert r.returncode == 1 and b"RuntimeError: picky kernel: batch 6" in r.stderr, r.stderr
    recs = records(r.stdout)
    models = {m.model: m for m in recs if isinstance(m, Model)}
    assert sorted(models) == ["dynamic_later.py[0/0]", "dynamic_later.py[0/1@step2]", "dynamic_later.py[0/1]"]
    later = models["dynamic_later.py[0/1@step2]"]
    assert later.captured.unrunnable is None and b"does not run here" not in r.stderr, r.stderr
    assert tuple(load_model(later.file).inputs[-1].shape) == (6, 8)
    assert next((c.model, c.step) for c in recs if isinstance(c, Crash)) == ("dynamic_later.py[0/1@step2]", 2)


def test_a_script_that_raises_exits_1_with_its_exception_its_output_untouched(store, tmp_path):
    out = tmp_path / "run.ndjson"
    r = capture(store, "--out", str(out), "--", sys.executable, "raises.py")
    without = subprocess.run([sys.executable, "raises.py"], capture_output=True, cwd=SCRIPTS)
    assert r.returncode == without.returncode == 1
    assert r.stdout == without.stdout == b"before [3.0, 3.0, 3.0]\n"  # --out: the script's stdout is its own
    # the script's stderr (its print, its traceback) as it was without capture, beside our capture: lines
    theirs = b"".join(x for x in r.stderr.splitlines(keepends=True) if not x.startswith(b"capture: "))
    assert theirs == without.stderr and theirs.endswith(b"ValueError: bad batch at step 3\n")
    _, model, crash = records(out.read_bytes())  # the graph compiled before the failure, then how it ended
    assert model.model == "raises.py[0/0]" and (crash.exception, crash.message) == ("ValueError", "bad batch at step 3")
    assert model.captured.values == "small"
    assert Path(model.file).read_text().split("example_inputs = (")[1].lstrip().startswith("_load(")  # saved


def test_torchrun_ddp_ranks_are_tagged_and_compile_of_ddp_gives_a_graph_per_bucket(store):
    from pt2kit.runtime.common.modelfile import load_model

    torchrun = str(Path(sys.executable).with_name("torchrun"))
    r = capture(store, "--rank", "all", "--", torchrun, "--standalone", "--nproc-per-node", "2", "ddp.py")
    assert r.returncode == 0, r.stderr
    # the two ranks write to one pipe: under PYTHONUNBUFFERED a line and its newline are two writes, which
    # may interleave ("rank 0 donerank 1 done\n\n"), so each rank's words are looked for, not whole lines
    assert b"rank 0 done" in r.stderr and b"rank 1 done" in r.stderr, r.stderr
    models = records(r.stdout)[1:]
    # DDP(torch.compile(net)): one graph; torch.compile(DDP(net)): DDPOptimizer's two buckets, one compile id
    cid = models[1].captured.compile_id
    assert [(m.captured.rank, m.model) for m in models] == [
        (0, "ddp.py[0/0]"), (0, f"ddp.py[{cid}#0]"), (0, f"ddp.py[{cid}#1]"),
        (1, "ddp.py[r1:0/0]"), (1, f"ddp.py[r1:{cid}#0]"), (1, f"ddp.py[r1:{cid}#1]")]
    first, second = models[1:3]
    assert (first.captured.function, first.captured.grad, first.parameters) == ("forward", True, 512 * 512 + 512)
    assert first.captured.source == f"{SCRIPTS / 'ddp.py'}:14"
    # the backend got fake inputs; the frame's own (the batch, the weights) are written with their values,
    # the activation between the buckets is seeded in [-1, 1] and the header says it is not real
    one, two = load_model(first.file), load_model(second.file)
    assert [tuple(t.shape) for t in one.call()] == [(4, 512)] and [tuple(t.shape) for t in two.call()] == [(4, 512)]
    assert Path(first.file).read_text().count("_seeded(") == 1  # its def: every value the script's
    text = Path(second.file).read_text()
    assert text.count("torch.nn.Parameter(_load(") == 2  # b.weight, b.bias: the script's values
    assert "\n# values not real: relu: the backend got them as fake tensors" in text
    (relu,) = two.inputs
    assert relu.abs().max() <= 1 and relu.abs().min() < relu.abs().max()  # seeded, not zeros posing as data


def test_mp_spawn_workers_are_told_apart_by_the_rank_they_join_with(store):
    """mp.spawn's workers have no RANK in their environment: each graph takes the rank torch.distributed
    gives it when compiled, so --rank 0 keeps one worker's and --rank all labels both apart."""
    one = capture(store, "--", sys.executable, "spawn.py", env={"MASTER_PORT": free_port()})
    both = capture(store, "--rank", "all", "--", sys.executable, "spawn.py", env={"MASTER_PORT": free_port()})
    assert one.returncode == both.returncode == 0, (one.stderr + both.stderr)[-2000:]
    assert [(m.model, m.captured.rank) for m in records(one.stdout)[1:]] == [("spawn.py[0/0]", 0)]
    assert sorted((m.model, m.captured.rank) for m in records(both.stdout)[1:]) == [
        ("spawn.py[0/0]", 0), ("spawn.py[r1:0/0]", 1)]


def test_graphs_and_the_run_budget_decide_what_the_script_writes(store, tmp_path):
    """--graphs IDS: the other graphs' tensors and model files are never written (only their lines, so they
    count as compiled); --max-run-bytes: past it inputs are seeded, said once on stderr and in the header."""
    scratch = tmp_path / "store"
    r = capture(scratch, "--graphs", "0/0,0/1", "--max-run-bytes", "352", "--", sys.executable, "breaks.py",
                str(tmp_path / "out.pt"))
    assert r.returncode == 0, r.stderr
    _, first, recompiled = records(r.stdout)
    assert [first.model, recompiled.model] == ["breaks.py[0/0]", "breaks.py[0/1]"]
    # 0/0's x (2x8), proj.weight and proj.bias: 352 bytes, the whole budget; 0/1 gets nothing saved
    first_text, text = Path(first.file).read_text(), Path(recompiled.file).read_text()
    assert first_text.count("_load(") == 4 and "_load(" not in text.split("class Model")[1]
    assert "\n# values seeded past the run's budget: this run's tensor files reached --max-run-bytes (352 bytes)" in text
    assert "past the run's budget" not in first_text
    assert r.stderr.count(b"--max-run-bytes") == 1
    assert b"capture: warning: --max-run-bytes: the run's saved inputs reached 352 bytes at breaks.py[0/1]" in r.stderr
    blobs = sorted(p.suffix for p in (scratch / "blobs").rglob("*.*"))
    assert blobs == [".log", ".pt", ".pt", ".pt", ".py", ".py"]  # 1/0 and 1/1 wrote nothing
