from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

import msgspec
import pytest

from pt2kit.runtime.parent.session import Session

GRAPH = b'{"kind":"graph","v":1,"run":"a","phase":"dynamo"}\n'


def pt2kit(*args, stdin=b"", **kw):
    return subprocess.run([sys.executable, "-m", "pt2kit.runtime", *args], input=stdin, capture_output=True, **kw)


def test_help_does_not_import_torch():
    code = ("import sys; from pt2kit.runtime.__main__ import app\n"
            "try:\n    app(['cat', '--help'])\nexcept SystemExit:\n    pass\n"
            # no pydantic of ours (typer 0.29 and later parse with it: theirs to import)
            "import importlib.metadata as md\n"
            "assert 'pydantic' not in sys.modules or any(r.startswith('pydantic') for r in md.requires('typer'))\n"
            "import pt2kit.runtime.parent.session, pt2kit.runtime.parent.child, pt2kit.runtime.common.modelfile, pt2kit.runtime.common.config\n"
            "assert 'torch' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Exit codes: 0 clean; 1 findings; 2 bad usage" in r.stdout


def test_bad_stream_is_one_line_exit_2_and_earlier_lines_kept():
    r = pt2kit("cat", stdin=GRAPH + b"\x00\x01garbage\n")
    assert r.returncode == 2
    assert r.stdout == GRAPH
    assert r.stderr.decode() == "pt2kit: error: <stdin>:2: not JSON: JSON is malformed: invalid character (byte 0)\n"


def test_newer_schema_exit_2():
    r = pt2kit("cat", stdin=b'{"kind":"graph","v":3,"run":"a","phase":"x"}\n')
    assert r.returncode == 2 and b"reads v1" in r.stderr and r.stderr.count(b"\n") == 1


def test_broken_pipe_exits_141_without_traceback():
    data = GRAPH * 200_000
    p = subprocess.Popen(f"{sys.executable} -m pt2kit.runtime cat | head -1", shell=True, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, executable="/bin/bash")
    out, err = p.communicate(data)
    assert out == GRAPH
    assert err == b""
    r = subprocess.run(f"set -o pipefail; {sys.executable} -m pt2kit.runtime cat < /dev/stdin | head -1 >/dev/null",
                       shell=True, input=data, executable="/bin/bash", capture_output=True)
    assert r.returncode == 141 and b"Traceback" not in r.stderr


def test_a_closed_stdout_is_one_line_and_exit_2(tmp_path):
    # `tool >&-` (issue 55): the records went to the /dev/null held on fd 1, and the tool exited 0
    r = subprocess.run(["bash", "-c", '"$@" >&-', "-", sys.executable, "-m", "pt2kit.runtime", "cat"], input=GRAPH,
                       capture_output=True)
    assert (r.returncode, r.stderr) == (2, b"pt2kit: error: stdout is closed: the records have nowhere to go\n")


def test_cat_appending_to_its_own_input_is_refused_before_it_reads(tmp_path):
    stream = tmp_path / "run.ndjson"
    stream.write_bytes(GRAPH)
    for args, stdin in ((["cat", str(stream)], subprocess.DEVNULL), (["cat"], stream.open("rb")),
                        (["cat", str(tmp_path)], subprocess.DEVNULL)):
        with stream.open("ab") as out:
            r = subprocess.run([sys.executable, "-m", "pt2kit.runtime", *args], stdin=stdin, stdout=out,
                               stderr=subprocess.PIPE, timeout=60)
        assert r.returncode == 2
        what = "stdin's file" if args == ["cat"] else f"the stream {stream}"
        assert r.stderr.decode() == (f"pt2kit: error: stdout is the same file as {what}, which this tool reads; "
                                     "send stdout elsewhere\n")
        assert stream.read_bytes() == GRAPH  # cat x >> x would have grown it without end


def test_terminal_on_stdin_is_a_hint_and_exit_2():
    primary, secondary = pty.openpty()
    r = subprocess.run([sys.executable, "-m", "pt2kit.runtime", "cat"], stdin=secondary, capture_output=True,
                       timeout=60)
    os.close(primary)
    os.close(secondary)
    assert r.returncode == 2
    assert r.stderr.decode().startswith("pt2kit: error: pt2kit reads records from a pipe, and stdin is a terminal")


def test_session_writes_error_record_after_header_and_maps_exit_codes(tmp_path, capsys):
    from pt2kit.runtime.common.errors import UsageError

    out = io.BytesIO()
    s = Session("fxcheck", "1.0", store=tmp_path, stdout=out)

    def work():
        s.header(torch="2.13.0")
        raise UsageError("m.py: no such model file")

    with pytest.raises(SystemExit) as e:
        with s:
            work()
    assert e.value.code == 2
    lines = [msgspec.json.decode(x) for x in out.getvalue().splitlines()]
    assert [x["kind"] for x in lines] == ["header", "error"]
    assert lines[1]["message"] == "m.py: no such model file" and lines[1]["exit_code"] == 2
    assert lines[0]["store"] == str(tmp_path.absolute()) and lines[0]["torch"] == "2.13.0"
    assert capsys.readouterr().err == "fxcheck: error: m.py: no such model file\n"

    s2 = Session("fxcheck", "1.0", store=tmp_path, stdout=io.BytesIO())
    for exc, code in ((KeyboardInterrupt(), 130), (ZeroDivisionError("x"), 3)):
        def boom(exc=exc):
            raise exc
        with pytest.raises(SystemExit) as e:
            with s2:
                boom()
        assert e.value.code == code
    assert "internal error: ZeroDivisionError: x  (--debug for the traceback)" in capsys.readouterr().err


def test_quiet_silences_warnings(capsys):
    Session("t", "1", quiet=True, stdout=io.BytesIO()).warn("loud")
    assert capsys.readouterr().err == ""


def test_crash_is_a_record_a_line_and_exit_3(capsys):
    out = io.BytesIO()
    s = Session("kdiff", "1.0", stdout=out)
    code = s.crash("m.py", {"stage": "run test (inductor)", "signal": "SIGSEGV", "exitcode": -11,
                            "message": "child process killed by SIGSEGV", "stderr_tail": "Fatal Python error"})
    assert code == 3
    (rec,) = [msgspec.json.decode(x) for x in out.getvalue().splitlines()]
    assert rec["kind"] == "crash" and rec["signal"] == "SIGSEGV" and rec["model"] == "m.py"
    assert capsys.readouterr().err == ("kdiff: m.py crashed during run test (inductor): SIGSEGV: "
                                       "child process killed by SIGSEGV\n")


def test_open_model_checks_the_file_before_the_header(tmp_path):
    import pytest

    from pt2kit.runtime.common.errors import ModelFileError

    out = io.BytesIO()
    s = Session("kdiff", "1.0", store=tmp_path, stdout=out)
    with pytest.raises(ModelFileError, match=r"nope\.py: no such model file"):
        s.open_model(str(tmp_path / "nope.py:build"), device="cpu")
    assert out.getvalue() == b"" and not s.header_written
    f = tmp_path / "m.py"
    f.write_text("model = None\n")
    assert s.open_model(f"{f}:build", device="cuda") == "m.py:build"
    header = msgspec.json.decode(out.getvalue().splitlines()[0])
    assert header["kind"] == "header" and header["device"] == "cuda"


def test_capture_without_pt2kit_capture_is_one_line_exit_2():
    code = ("import sys, importlib.metadata as m\nm.entry_points = lambda **k: []\n"
            "sys.argv = ['pt2kit', 'capture', '--', 'python', 't.py']\n"
            "from pt2kit.runtime.__main__ import main\nmain()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == "pt2kit: error: pt2kit capture needs pt2kit-capture: pip install pt2kit-capture\n"
