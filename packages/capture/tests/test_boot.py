"""The child side of `pt2kit capture`, run as the parent runs it: real user scripts (tests/scripts/), each a
subprocess with the boot directory first on PYTHONPATH and PT2KIT_CAPTURE_DIR set by hand (no parent).

Each script runs once (module-scoped fixtures, one xdist group per script) and feeds several asserts:
the manifest lines, the model file loaded with pt2kit.runtime.common.modelfile giving what the graph gave in
the script (bit for bit: eager backend, values "all"; close: inductor), the user's output unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pt2kit.capture
from pt2kit.runtime.common.modelfile import load_model

BOOT = Path(pt2kit.capture.__file__).parent / "boot"
SCRIPTS = Path(__file__).parent / "scripts"


class Run:
    def __init__(self, p: subprocess.CompletedProcess, scratch: Path, saved: Path) -> None:
        self.code, self.stdout, self.stderr = p.returncode, p.stdout, p.stderr
        self.scratch = scratch
        self.pdirs = sorted(scratch.glob("p*"))
        manifests = [d / "graphs.ndjson" for d in self.pdirs if (d / "graphs.ndjson").exists()]
        self.lines = [json.loads(x) for m in manifests for x in m.read_text().splitlines()]
        self.saved = torch.load(saved, weights_only=True) if saved.exists() else None

    def line(self, compile_id: str) -> dict:
        (line,) = [x for x in self.lines if x["compile_id"] == compile_id]
        return line

    def load(self, compile_id: str):
        (pdir,) = self.pdirs
        return load_model(str(pdir / self.line(compile_id)["file"]))


def run(tmp: Path, script: str, *args: str, boot: bool = True, **env: str) -> Run:
    scratch, saved = tmp / "scratch", tmp / "saved.pt"
    full = {k: v for k, v in os.environ.items() if not k.startswith("PT2KIT_CAPTURE") and k != "RANK"}
    if boot:
        full.update(PYTHONPATH=os.pathsep.join([str(BOOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
                    PT2KIT_CAPTURE_DIR=str(scratch))
        full.update(env)
    p = subprocess.run([sys.executable, *([str(SCRIPTS / script), str(saved)] if script else []), *args],
                       capture_output=True, text=True, env=full, cwd=tmp, timeout=900)
    return Run(p, scratch, saved)


def _fixture(script: str, **env: str):
    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory):
        return run(tmp_path_factory.mktemp(script.removesuffix(".py")), script, **env)

    return fixture


plain = _fixture("plain.py", PT2KIT_CAPTURE_VALUES="all")
breaks = _fixture("breaks.py", PT2KIT_CAPTURE_VALUES="all")
cond = _fixture("cond.py", PT2KIT_CAPTURE_VALUES="all")
train = _fixture("train.py")
aoti = _fixture("aoti.py")


@pytest.mark.xdist_group("boot-plain")
def test_plain_graph_is_the_model_file_bit_for_bit(plain):
    assert plain.code == 0, plain.stderr
    (line,) = plain.lines
    assert (line["compile_id"], line["function"], line["backend"], line["values"]) == ("0/0", "forward", "eager", "all")
    assert line["source"] == f"{SCRIPTS / 'plain.py'}:13" and line["called_from"] == f"{SCRIPTS / 'plain.py'}:21"
    assert (line["error"], line["capture_error"], line["mode"], line["grad"]) == (None, None, None, True)
    assert line["ops"] == {"torch._C._nn.linear": 2, "torch.relu": 1} and line["nodes"] == 3
    (x,) = [i for i in line["inputs"] if i["parameter"] is None]
    assert x == {"name": "L_x_", "parameter": None, "buffer": None, "dtype": "torch.float32", "shape": [2, 8], "stride": [8, 1],
                 "device": "cpu", "requires_grad": False, "value": "saved"}
    params = [i["parameter"] for i in line["inputs"] if i["parameter"]]
    assert sorted(params) == ["fc.bias", "fc.weight", "head.bias", "head.weight"]
    loaded = plain.load("0/0")
    assert [n for n, _ in loaded.model.named_parameters()] == params
    assert len(loaded.inputs) == 1
    (out,) = loaded.call()
    assert torch.equal(out, plain.saved["0/0"])
    text = (plain.pdirs[0] / line["file"]).read_text()
    assert "# File: " + str(SCRIPTS / "plain.py") + ":14 in forward, code: return self.head(torch.relu(self.fc(x)))" in text


@pytest.mark.xdist_group("boot-plain")
def test_tensor_files_are_named_by_their_sha256(plain):
    (line,) = plain.lines
    assert len(line["tensors"]) == 5
    for name in line["tensors"]:
        data = (plain.pdirs[0] / name).read_bytes()
        assert name == f"t/{hashlib.sha256(data).hexdigest()}.pt"


@pytest.mark.xdist_group("boot-breaks")
def test_graph_break_and_recompile_each_a_graph_with_its_compile_id(breaks):
    assert breaks.code == 0, breaks.stderr
    assert breaks.stdout == "halfway\nhalfway\n"
    assert [x["compile_id"] for x in breaks.lines] == ["0/0", "1/0", "0/1", "1/1"]
    assert len({x["file"] for x in breaks.lines}) == 4
    assert [x["function"] for x in breaks.lines] == ["step", "torch_dynamo_resume_in_step_at_12"] * 2
    first, recompiled = breaks.line("0/0"), breaks.line("0/1")
    assert [i["parameter"] for i in first["inputs"]] == ["proj.weight", "proj.bias", None]
    # the new batch size made dim 0 dynamic: a SymInt input, written as the int it stood for
    assert [i["value"] for i in recompiled["inputs"]] == ["saved", "saved", "int", "saved"]
    assert recompiled["inputs"][-1]["shape"] == [5, 8]
    for cid in ("1/0", "1/1"):
        (out,) = breaks.load(cid).call()
        assert torch.equal(out, breaks.saved[cid]), cid
    assert breaks.load("0/1").model(*breaks.load("0/1").inputs)[0].shape == (5, 8)


@pytest.mark.xdist_group("boot-cond")
def test_cond_branches_are_nested_modules(cond):
    assert cond.code == 0, cond.stderr
    (line,) = cond.lines
    assert line["ops"]["torch.ops.higher_order.cond"] == 1
    loaded = cond.load("0/0")
    assert isinstance(loaded.model.cond_true_0, torch.nn.Module)
    assert isinstance(loaded.model.cond_false_0, torch.nn.Module)
    (out,) = loaded.call()
    assert torch.equal(out, cond.saved["0/0"])
    text = (cond.pdirs[0] / line["file"]).read_text()
    assert f"# File: {SCRIPTS / 'cond.py'}:8 in pos, code: return x.cos() + 1" in text


@pytest.mark.xdist_group("boot-train")
def test_training_loop_graphs_need_grad_and_take_parameters(train):
    assert train.code == 0, train.stderr
    assert train.lines and all(x["grad"] and x["backend"] == "inductor" for x in train.lines)
    assert all(x["error"] is None and x["capture_error"] is None for x in train.lines)
    with_params = [x for x in train.lines if any(i["parameter"] for i in x["inputs"])]
    assert len(with_params) == 1
    loaded = train.load(with_params[0]["compile_id"])
    names = [n for n, _ in loaded.model.named_parameters()]
    assert names and set(names) <= set(train.saved["parameters"])
    assert all(p.requires_grad for p in loaded.model.parameters())
    # the loss graph, run eagerly from its model file, gives step 0's loss as Inductor computed it
    # each graph names the script's own line that called the model, past transformers' wrappers (the
    # functions Dynamo compiled are the library's: GPT-2's forward, its loss)
    assert {x["called_from"] for x in train.lines} == {f"{SCRIPTS / 'train.py'}:17"}
    (loss_line,) = [x for x in train.lines if x["function"] == "ForCausalLMLoss"]
    (loss,) = train.load(loss_line["compile_id"]).call()
    torch.testing.assert_close(loss.detach(), train.saved["losses"][0])


@pytest.mark.xdist_group("boot-aoti")
def test_aoti_script_gets_its_exported_program(aoti):
    assert aoti.code == 0, aoti.stderr
    (line,) = aoti.lines
    assert (line["compile_id"], line["backend"], line["function"], line["grad"]) == ("aoti/0", "aoti", "<module>", False)
    assert line["source"] == f"{SCRIPTS / 'aoti.py'}:21" and line["capture_error"] is None
    assert [i["parameter"] for i in line["inputs"]] == ["fc.weight", "fc.bias", None]
    loaded = aoti.load("aoti/0")
    assert [n for n, _ in loaded.model.named_parameters()] == ["fc.weight", "fc.bias"]
    (out,) = loaded.call()
    torch.testing.assert_close(out.detach(), aoti.saved["aoti/0"])


def test_python_without_torch_stays_without_it_and_a_shadowed_sitecustomize_runs(tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import sys\nsys.stdout.write('user sitecustomize\\n')\n")
    r = run(tmp_path, "", "-c", "import sys; print('torch' in sys.modules, 'pt2kit_capture_boot' in sys.modules)",
            PYTHONPATH=os.pathsep.join([str(BOOT), str(user)]))
    assert (r.code, r.stdout, r.stderr) == (0, "user sitecustomize\nFalse True\n", "")
    assert not r.scratch.exists()


def test_rank_filter(monkeypatch):
    monkeypatch.syspath_prepend(str(BOOT))
    import pt2kit_capture_process as process

    for rank, want, kept in [(None, None, True), ("1", None, False), ("1", "1", True), ("3", "all", True),
                             (None, "1", False), ("0", "0", True)]:
        for name, value in (("RANK", rank), ("PT2KIT_CAPTURE_RANK", want)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        assert process.kept() is kept, (rank, want)


def test_graphs_first_writes_the_first_graph_again_after_a_dynamo_restart(tmp_path, monkeypatch):
    """--graphs first: the boot writes files for one graph a process; one Dynamo traced again is still it."""
    monkeypatch.syspath_prepend(str(BOOT))
    import pt2kit_capture_manifest as boot
    import pt2kit_capture_process

    monkeypatch.setenv("PT2KIT_CAPTURE_DIR", str(tmp_path))
    monkeypatch.setitem(boot._STATE, "first", False)
    for graphs, cid, want in [("all", "0/3", True), ("0/1,aoti/0", "aoti/0", True), ("0/1,aoti/0", "0/2", False),
                              ("failing", "0/0", True)]:
        monkeypatch.setenv("PT2KIT_CAPTURE_GRAPHS", graphs)
        assert boot.selected(cid) is want, (graphs, cid)
    monkeypatch.setenv("PT2KIT_CAPTURE_GRAPHS", "first")
    line = boot.new_line("eager")
    graph = torch.fx.Graph()
    graph.output(graph.call_function(torch.neg, (graph.placeholder("x"),)))
    boot.record(line, torch.fx.GraphModule(torch.nn.Module(), graph), [torch.ones(2)], "handed")
    assert line["selected"] and (pt2kit_capture_process.pdir() / line["file"]).is_file() and not boot.selected("0/1")
    boot.discard(line)  # Dynamo raised RestartAnalysis: the next graph is the first
    assert boot.selected("0/1")


def test_a_compiler_error_is_its_graph_failing_only_a_restart_drops_the_graph(tmp_path, monkeypatch):
    """Inductor's InductorError derives from ShortenTraceback, which the boot took for a Dynamo restart: a
    C++ build failure dropped its graph ("no graph was compiled"). Only RestartAnalysis and its kinds do."""
    monkeypatch.syspath_prepend(str(BOOT))
    import pt2kit_capture_manifest as boot
    import pt2kit_capture_process
    from torch._dynamo.exc import BackendCompilerFailed, TensorifyScalarRestartAnalysis
    from torch._inductor.exc import CppCompileError, InductorError

    monkeypatch.setenv("PT2KIT_CAPTURE_DIR", str(tmp_path))
    monkeypatch.setenv("PT2KIT_CAPTURE_GRAPHS", "all")

    def raises(e: Exception):
        def call():
            raise e
        return call

    failures = [InductorError(CppCompileError(["g++", "k.cpp"], "boom"), None), TensorifyScalarRestartAnalysis(),
                BackendCompilerFailed("relu_compile_error_TESTING_ONLY", ValueError("ReluCompileError"), None)]
    for i, e in enumerate(failures):
        line = boot.new_line("inductor")
        line["compile_id"] = f"0/{i}"
        with pytest.raises(type(e)):
            boot.compile_through(line, raises(e))
    lines = [json.loads(x) for x in (pt2kit_capture_process.pdir() / "graphs.ndjson").read_text().splitlines()]
    assert [(x["compile_id"], x["stage"], x["error"].split("\n")[0]) for x in lines] == [
        ("0/0", "build", "CppCompileError: C++ compile error"), ("0/2", "compile", "ValueError: ReluCompileError")]
