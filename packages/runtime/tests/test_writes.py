"""Output paths (pt2kit.runtime.parent.writes): refused before any work when they would lose an input or
cannot be written, and written through a rename that keeps the user's links."""

from __future__ import annotations

import os
import sys

import pytest

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.parent.writes import check_output, check_stdout, write_output

REPRO = '#!/usr/bin/env python3\n"""A standalone repro made by pt2kit minify 0.10.10 on torch 2.13.\n'


@pytest.fixture
def model(tmp_path):
    m = tmp_path / "relu.py"
    m.write_text("model = 1\n")
    return m


def test_an_input_is_refused_by_name_link_and_hard_link(tmp_path, model):
    inputs = [("the model file", str(model))]
    with pytest.raises(UsageError) as e:
        check_output("-o", model, inputs)
    assert str(e.value) == f"-o {model}: is the same file as the model file {model}; writing it would overwrite an input"
    (tmp_path / "link.py").symlink_to(model)
    with pytest.raises(UsageError) as e:
        check_output("-o", tmp_path / "link.py", inputs)
    assert str(e.value) == (f"-o {tmp_path / 'link.py'}: is the same file as the model file {model} (it resolves to "
                            f"{model}); writing it would overwrite an input")
    os.link(model, tmp_path / "hard.py")
    with pytest.raises(UsageError, match="is the same file as the model file"):
        check_output("-o", tmp_path / "hard.py", inputs)
    # the input given through a link is the same file too
    with pytest.raises(UsageError, match=r"is the same file as the model file .*link\.py"):
        check_output("-o", model, [("the model file", str(tmp_path / "link.py"))])
    assert model.read_text() == "model = 1\n"
    other = tmp_path / "other.py"
    other.write_text(REPRO)
    assert check_output("-o", other, inputs) == other  # pt2kit's own earlier output, no input: may be replaced
    assert check_output("-o", tmp_path / "new.py", inputs) == tmp_path / "new.py"


def test_stdins_file_is_an_input(tmp_path, monkeypatch):
    stream = tmp_path / "run.ndjson"
    stream.write_text('{"kind":"header","v":1}\n')  # a stream: pt2kit's, which an -o may replace
    with open(stream) as f:
        monkeypatch.setattr(sys, "stdin", f)
        with pytest.raises(UsageError) as e:
            check_output("-o", stream, [("stdin", "-")])
    assert str(e.value) == f"-o {stream}: is the same file as stdin's file; writing it would overwrite an input"
    with open(os.devnull) as f:  # not a regular file: never the same as an output
        monkeypatch.setattr(sys, "stdin", f)
        assert check_output("-o", stream, [("stdin", "-")]) == stream


def test_the_directory_is_checked_before_the_work(tmp_path, model):
    # a directory not there yet is made at the write (an upstream tool in the pipe may be making it)
    assert check_output("-o", tmp_path / "new" / "dir" / "repro.py") == tmp_path / "new" / "dir" / "repro.py"
    assert not (tmp_path / "new").exists()
    write_output(tmp_path / "new" / "dir" / "repro.py", "x")
    assert (tmp_path / "new" / "dir" / "repro.py").read_text() == "x"
    with pytest.raises(UsageError) as e:
        check_output("-o", model / "sub" / "repro.py")
    assert str(e.value) == f"-o {model / 'sub' / 'repro.py'}: {model} is not a directory"
    with pytest.raises(UsageError) as e:
        check_output("-o", tmp_path)
    assert str(e.value) == f"-o {tmp_path}: is a directory; name the file to write"
    assert str(check_output("-o", os.devnull, [("stdin", "-")])) == os.devnull  # written in place, never replaced


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_directory_that_cannot_be_written_in(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(UsageError, match=r"cannot write in directory .*ro \(permission denied\)$"):
            check_output("-o", ro / "repro.py")
    finally:
        ro.chmod(0o700)


def test_stdout_into_an_input_is_refused(tmp_path, monkeypatch):
    stream = tmp_path / "run.ndjson"
    stream.write_text("{}\n")
    with open(stream, "a") as f:
        monkeypatch.setattr(sys, "stdout", f)
        with pytest.raises(UsageError) as e:
            check_stdout([("the stream", str(stream))])
    assert str(e.value) == f"stdout is the same file as the stream {stream}, which this tool reads; send stdout elsewhere"
    check_stdout([("the stream", os.devnull)])


def test_write_keeps_the_users_link_and_leaves_no_temp(tmp_path):
    real = tmp_path / "real.py"
    real.write_text(REPRO)  # an earlier run's repro: replaced
    link = tmp_path / "link.py"
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    write_output(tmp_path / "fresh.py", b"bytes")
    assert (tmp_path / "fresh.py").read_bytes() == b"bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.py", "link.py", "real.py"]
