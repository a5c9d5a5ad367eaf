"""The models a piped stream names, typed (runtime 2.9): read_piped's PipedModel, the one job a tool
builds from it (ModelJob.for_piped), and the tuple forms the tools released before 2.9 still call."""

from __future__ import annotations

from pathlib import Path

import pytest

from pt2kit.runtime.common.job import ModelJob
from pt2kit.runtime.parent.piped import PipedModel, each_piped, piped, piped_labelled, piped_models, read_piped
from pt2kit.schema import SCHEMA_MAJOR, Header, Model, encode, read_stream

MODEL = "import torch\nmodel = torch.nn.ReLU()\nexample_inputs = (torch.ones(2),)\n"


class _Session:
    """What read_piped asks of a Session: the stream (here a file for stdin), the header, stderr."""

    def __init__(self, stream: Path) -> None:
        self.stream, self.header_written, self.said, self.headers = stream, False, [], []

    def read(self, sources, *, want, hint):
        return read_stream([str(self.stream)], want=want)

    def begin(self, *, device, config=None):
        self.header_written = True
        self.headers.append((device, config))

    def say(self, msg):
        self.said.append(msg)

    warn = say


@pytest.fixture
def stream(tmp_path):
    model = tmp_path / "m.py"
    model.write_text(MODEL)
    rec = dict(v=SCHEMA_MAJOR, run="r1")
    lines = [Header(**rec, tool="capture", tool_version="0.3.0", argv=[], time="t", host="h", python="3",
                    store=str(tmp_path)),
             Model(**rec, model="train.py[0/1]", file=str(model), device="cpu", train=True,
                   config={"inductor.fallback_random": "true"})]
    path = tmp_path / "in.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in lines))
    return path, model


def test_a_model_record_is_one_typed_piped_model_and_the_job_a_tool_runs_for_it(stream):
    path, model = stream
    s = _Session(path)
    got = list(read_piped(s, device=None, hint="", config={"a.b": "1"}, also=[Header]))
    assert [type(line.record).__name__ for line, _ in got] == ["Header", "Model"] and got[0][1] is None
    m = got[1][1]
    assert isinstance(m, PipedModel)
    assert (m.spec, m.device, m.where, m.label, m.train) == (str(model.resolve()), "cpu", f"{path}:2", "train.py[0/1]", True)
    assert m.config == {"inductor.fallback_random": "true", "a.b": "1"}  # the command line's over the record's
    assert s.headers == [("cpu", {"a.b": "1"})] and s.said == []  # the tool says when it runs one

    job = ModelJob(config={"a.b": "1"}, timeout=5.0).for_piped(m)
    assert (job.model, job.device, job.config, job.label) == (m.spec, "cpu", m.config, "train.py[0/1]")
    assert job.from_stream and not job.emit_model and job.timeout == 5.0
    assert ModelJob().for_piped(m, device="cuda", config={}).device == "cuda"  # a tool's own choice wins


def test_each_piped_says_the_model_file_it_runs(stream):
    path, model = stream
    s = _Session(path)
    (m,) = each_piped(s, device="meta", hint="")
    assert m.device == "meta" and s.said == [f"{path}:2: running model file {model.resolve()} named by the stream"]


def test_the_tuple_forms_tools_released_before_2_9_call_are_the_same_models(stream):
    """benchrun 0.3.0 calls Session.piped_models, 0.3.1 piped_labelled, kdiff 2.4.0, guardscan 2.1.1 and minify 0.5.0 Session.piped
    (unpacking tuples); runtime accepts them until 3.0."""
    path, _ = stream
    (m,) = each_piped(_Session(path), device=None, hint="")
    assert list(piped_models(_Session(path), device=None, hint="")) == [(m.spec, m.device, m.config)]
    assert list(piped_labelled(_Session(path), device=None, hint="")) == [(m.spec, m.device, m.config, m.label)]
    assert [t for _, t in piped(_Session(path), device=None, hint="")] == [None, (m.spec, m.device, m.config, m.where)]
