"""What minify is handed stays the user's: -o never lands on an input (model, stream, stdin's file,
backend), is checked before the run, and a repro that cannot be written at the end stays in the
store with its record; numeric flags out of range are refused before anything runs."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

import msgspec
import pytest
from mntest import MODELS

from pt2kit.schema import Diff, Header, Model

COMMON = dict(tool_version="1", argv=["kdiff"], time="t", host="h", python="3", store="s")


@pytest.fixture
def relu(tmp_path):
    m = tmp_path / "relu.py"
    shutil.copy(MODELS / "small.py", m)
    return m


def _refused(r, line: str) -> None:
    assert r.code == 2, r.stderr
    assert r.stderr.strip().splitlines() == [f"minify: error: {line}"], r.stderr
    assert not r.kind("repro")


def test_o_on_the_model_file_by_name_link_or_hard_link_is_refused(minify, relu, tmp_path):
    before = relu.read_bytes()
    r = minify(f"{relu}:posnet", "-o", str(relu))
    _refused(r, f"-o {relu}: is the same file as the model file {relu}; writing it would overwrite an input")
    assert r.stdout == b""  # before the header: nothing ran
    (tmp_path / "link.py").symlink_to(relu)
    os.link(relu, tmp_path / "hard.py")
    r = minify(f"{relu}:posnet", "-o", str(tmp_path / "link.py"))
    _refused(r, f"-o {tmp_path / 'link.py'}: is the same file as the model file {relu} (it resolves to {relu}); "
             "writing it would overwrite an input")
    r = minify(f"{tmp_path / 'link.py'}:posnet", "-o", str(tmp_path / "hard.py"))
    _refused(r, f"-o {tmp_path / 'hard.py'}: is the same file as the model file {tmp_path / 'link.py'}; "
             "writing it would overwrite an input")
    r = minify(f"{MODELS / 'small.py'}:posnet", "--backend", f"{relu}:nan_backend", "-o", str(relu))
    _refused(r, f"-o {relu}: is the same file as the backend file {relu}; writing it would overwrite an input")
    assert relu.read_bytes() == before


def _stream(model_file) -> bytes:
    lines = [Header(v=1, run="a", tool="fxcheck", **COMMON),
             Model(v=1, run="a", model="relu.py:clean", file=str(model_file), entry="clean"),
             Diff(v=1, run="a", model="relu.py:clean", output="out[0]", ref="eager", test="inductor",
                  dtype="float32", shape=[2], atol=0.0, rtol=0.0, passed=False)]
    return b"".join(msgspec.json.encode(x) + b"\n" for x in lines)


def test_o_on_the_input_stream_or_the_streams_model_is_refused(relu, tmp_path):
    # the model file carries pt2kit's marker (an earlier repro's docstring line), so only its being the
    # stream's model refuses it: a file of the user's is refused before the stream is read
    relu.write_text('"""A standalone repro made by pt2kit minify 0.1 on torch 2.13."""\n' + relu.read_text())
    stream = tmp_path / "run.ndjson"
    stream.write_bytes(_stream(relu))
    model_bytes = relu.read_bytes()

    def run(*args: str) -> subprocess.CompletedProcess:
        with stream.open("rb") as stdin:
            return subprocess.run([sys.executable, "-m", "pt2kit.minify", *args, "--store", str(tmp_path / "s")],
                                  stdin=stdin, capture_output=True, text=True, cwd=tmp_path, timeout=120)

    r = run("-o", str(stream))  # `minify -o run.ndjson < run.ndjson`
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"minify: error: -o {stream}: is the same file as stdin's file; "
                        "writing it would overwrite an input\n")
    (tmp_path / "repro.py").symlink_to(relu)
    r = run("-o", str(tmp_path / "repro.py"))
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"minify: error: -o {tmp_path / 'repro.py'}: is the same file as the model file {relu} (it resolves to "
        f"{relu}); writing it would overwrite an input")
    assert "running model file" not in r.stderr  # refused before the stream's model ran
    assert stream.read_bytes() == _stream(relu) and relu.read_bytes() == model_bytes


def test_bad_outputs_and_numbers_are_one_line_before_any_work(minify, tmp_path):
    model = f"{MODELS / 'small.py'}:clean"
    for args, line in [
        (("-o", str(MODELS / "small.py" / "repro.py")),
         f"-o {MODELS / 'small.py' / 'repro.py'}: {MODELS / 'small.py'} is not a directory"),
        (("-o", str(tmp_path)), f"-o {tmp_path}: is a directory; name the file to write"),
        (("--jobs", "0"), "--jobs 0: expected a number of workers (or auto) >= 1"),
        (("--jobs", "-3"), "--jobs -3: expected a number of workers (or auto) >= 1"),
        (("--jobs", "many"), "--jobs many: expected a number of workers >= 1, or auto"),
        (("--seed", "999999999999999999999999999"),
         "--seed 999999999999999999999999999: expected a seed torch accepts, from -2**63 to 2**64-1"),
        (("--timeout", "1e300"), "--timeout 1e+300: expected a finite number > 0 and <= 604800"),
        (("--align", "0"), "--align 0: expected >= 1"),
    ]:
        r = minify(model, *args, timeout=60)
        _refused(r, line)
        assert r.stdout == b"", args


def test_jobs_past_what_the_machine_serves_is_capped_with_a_warning(monkeypatch, capsys):
    from pt2kit.minify.job import parse_jobs
    from pt2kit.minify.parent import drive
    from pt2kit.runtime.parent.session import Session

    monkeypatch.setattr(drive, "worker_cap", lambda per: (3, "3 usable CPU(s)"))
    s = Session("minify", "0", stdout=io.BytesIO())
    assert drive.workers(s, parse_jobs("100000")) == 3
    assert capsys.readouterr().err == ("minify: warning: --jobs 100000: capped at 3 worker(s), what this machine "
                                       "serves (3 usable CPU(s))\n")
    assert drive.workers(s, parse_jobs("2")) == 2 and drive.workers(s, parse_jobs("auto")) in (1, 2, 3)
    assert capsys.readouterr().err == ""


def test_a_repro_that_cannot_be_written_at_the_end_stays_in_the_store(minify, tmp_path):
    """The -o directory was there when minify checked it; the model replaces it with a file while it
    runs. The repro is kept in the store, the record still comes (output null), the exit code is the
    finding's."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    m = tmp_path / "m.py"
    m.write_text(f"import os, sys\nsys.path.insert(0, {str(MODELS)!r})\nfrom small import posnet, nan_backend\n"
                 f"if os.path.isdir({str(out_dir)!r}):\n    os.rmdir({str(out_dir)!r})\n"
                 f"    open({str(out_dir)!r}, 'w').close()\n")
    r = minify(f"{m}:posnet", "--backend", f"{MODELS / 'small.py'}:nan_backend", "-o", str(out_dir / "repro.py"), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert "output" not in rep and rep["reproduced"] == 3  # null fields are left out of a record
    blob = tmp_path / "store" / rep["path"]["path"]
    assert f"minify: warning: -o {out_dir / 'repro.py'}: cannot write it now (" in r.stderr
    assert f"the repro is in the store: {blob}" in r.stderr
    assert "repro written to" not in r.stderr
    assert "A standalone repro made by pt2kit minify" in blob.read_text() and out_dir.is_file()
