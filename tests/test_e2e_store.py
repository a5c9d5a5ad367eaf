"""What `pt2kit capture` saved stays there and stays what it was: `pt2kit gc` given the capture's stream
keeps every tensor file its model files load (it deleted them all: kdiff then exited 2), and a tensor
file changed after the capture is refused by the model file that loads it (it loaded silently). One
capture of a real script (--values all: the user's weights and batch), shared by the tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from e2ekit import user_env

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # `pt2kit`, `kdiff`, `python` as the user's PATH finds them
pytestmark = pytest.mark.xdist_group("e2e-store")


def sh(cmd: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=cwd, executable="/bin/bash",
                          env=user_env(HOME=str(cwd)), timeout=300)


def models(stream: Path) -> list[dict]:
    return [r for r in map(msgspec.json.decode, stream.read_bytes().splitlines()) if r["kind"] == "model"]


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    work = tmp_path_factory.mktemp("captured")
    shutil.copy(ROOT / "packages" / "capture" / "tests" / "scripts" / "loop.py", work / "train.py")
    r = sh("pt2kit capture --store S --values all --graphs first -- python train.py > c.ndjson", work)
    assert r.returncode == 0, r.stderr
    (model,) = models(work / "c.ndjson")
    return work, model


def test_gc_now_with_the_capture_stream_keeps_every_tensor_its_model_file_loads(captured):
    work, model = captured
    tensors = sorted((work / "S" / "blobs").glob("*/*.pt"))
    assert len(tensors) == 3  # the batch, fc.weight and fc.bias
    # a stream written before the record named its tensors (only the model file and the trace): gc reads
    # the model file's _load calls from the store (never runs it), on a copy of the store moved with it
    legacy = work / "legacy.ndjson"
    legacy.write_bytes(b"".join(
        msgspec.json.encode({**r, "captured": {k: v for k, v in r["captured"].items() if k != "tensors"}}
                            if r["kind"] == "model" else r) + b"\n"
        for r in map(msgspec.json.decode, (work / "c.ndjson").read_bytes().splitlines())))
    shutil.copytree(work / "S", work / "old")
    r = sh("pt2kit gc --store old --prune now legacy.ndjson", work)
    assert r.returncode == 0 and "kept 5 blob(s) the streams reference" in r.stderr, r.stderr
    assert all((work / "old" / p.relative_to(work / "S")).is_file() for p in tensors)

    r = sh("pt2kit gc --store S --prune now c.ndjson", work)
    assert r.returncode == 0 and "kept 5 blob(s) the streams reference" in r.stderr, r.stderr
    assert all(p.is_file() for p in tensors)
    r = sh("kdiff --backend eager -q < c.ndjson > k.ndjson", work)
    assert r.returncode == 0, r.stderr
    assert [d["passed"] for d in map(msgspec.json.decode, (work / "k.ndjson").read_bytes().splitlines())
            if d["kind"] == "diff"] == [True] * 3  # the output, fc.weight.grad, fc.bias.grad (the batch needs no grad)
    # the record names each blob its model file needs, with its sha256 and size
    assert sorted(work / "S" / t["path"] for t in model["captured"]["tensors"]) == tensors


def test_a_tensor_file_changed_after_the_capture_is_refused_by_its_model_file(captured, tmp_path):
    import torch

    work, model = captured
    store = tmp_path / "S"
    shutil.copytree(work / "S", store)
    weight = sorted(store.glob("blobs/*/*.pt"), key=lambda p: p.stat().st_size)[-1]  # fc.weight, the largest
    data = bytearray(weight.read_bytes())
    original = torch.load(weight, weights_only=True)
    at = data.find(original.numpy().tobytes())
    assert at > 0
    data[at] ^= 0x01  # one bit of one weight's value: same size
    weight.write_bytes(bytes(data))
    assert not torch.equal(torch.load(weight, weights_only=True), original)  # torch.load reads it happily
    code = store / model["captured"]["code"]["path"]
    r = sh(f"python {code}", tmp_path)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ValueError: {weight}: not the bytes this model file saved") and \
        last.endswith("refusing to load it"), last
