"""The helper starts a tool as a user's shell would even when the test run ignores SIGINT (nohup, a
background job, some CI runners), shows a stuck tool's stderr, and reads records with the schema's
decoder."""

from __future__ import annotations

import signal
import subprocess
import sys
from contextlib import contextmanager

import pytest

from pt2kit.schema import Error, Header, StreamError, encode
from pt2kit.testkit import Result, ToolTimeout, module, popen, run, start_env

SHOW = ("import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
        "signal.getsignal(signal.SIGQUIT) == signal.SIG_DFL)")


@contextmanager
def ignored(*sigs: signal.Signals):
    """The test process as `trap '' INT QUIT` (or `cmd &` in a script) would start it."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def test_a_tool_gets_sigint_and_sigquit_at_their_defaults_when_the_test_run_ignores_them():
    with ignored(signal.SIGINT, signal.SIGQUIT):
        plain = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True)
        ours = run([sys.executable, "-c", SHOW])
    assert plain.stdout == "False False\n"  # what every test's runner passed on before
    assert (ours.code, ours.stdout, ours.stderr) == (0, b"True True\n", "")


def test_a_started_tool_stops_on_the_sigint_a_test_sends_while_the_test_run_ignores_it():
    with ignored(signal.SIGINT):
        p = popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with p:
        assert p.stdout.readline() == b"ready\n"
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=20)
    assert p.returncode == -signal.SIGINT and b"KeyboardInterrupt" in err


def test_a_tool_past_its_timeout_fails_the_test_with_its_stderr():
    stuck = "import sys, time; print('still compiling graph 3', file=sys.stderr, flush=True); time.sleep(60)"
    with pytest.raises(ToolTimeout) as e:
        run([sys.executable, "-c", stuck], timeout=1.5)
    assert "ran past 1.5s; its stderr so far:\nstill compiling graph 3\n" in str(e.value)
    assert isinstance(e.value, AssertionError)  # a failure, not an error, under any runner


def test_stdin_is_empty_unless_given_and_stdout_records_read_as_dicts_and_structs(tmp_path):
    header = Header(v=1, run="r1", tool="t", tool_version="0", argv=["t"], time="2026-01-01T00:00:00Z", host="h",
                    python="3.11", store=str(tmp_path))
    error = Error(v=1, run="r1", message="bad input", exit_code=2)
    stream = encode(header) + b"\n\n" + encode(error) + b"\n"
    echo = [sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"]
    assert run(echo).stdout == b""
    r = run(echo, stdin=stream)
    assert [x["kind"] for x in r.records] == ["header", "error"] and r.kind("error")[0]["message"] == "bad input"
    assert r.structs == [header, error] and r.of(Error) == [error]


def test_a_line_that_is_not_a_record_fails_structs_with_the_schemas_message():
    r = Result(0, b'{"kind":"error","v":1,"run":"r"}\n', "")
    assert r.records == [{"kind": "error", "v": 1, "run": "r"}]
    with pytest.raises(StreamError, match="invalid `error` record"):
        r.structs  # noqa: B018


def test_module_runs_python_dash_m_with_the_tests_interpreter():
    assert module("json.tool", "--compact") == [sys.executable, "-m", "json.tool", "--compact"]
    r = run(module("json.tool", "--compact"), stdin=b'{"a": [1, 2]}')
    assert (r.code, r.stdout, r.argv[1:]) == (0, b'{"a":[1,2]}\n', ("-m", "json.tool", "--compact"))


def test_run_alone_runs_a_script_where_pt2kit_cannot_be_imported(tmp_path, monkeypatch):
    """Without a fork server (this package's venv has no pt2kit-runtime, and the variable is cleared), a fresh
    isolated Python: the script's folder is its working directory, its exit code comes back, and an import
    of pt2kit or pt2kit_portable fails in it."""
    from pt2kit.testkit import run_alone

    monkeypatch.delenv("PT2KIT_FORKSERVER", raising=False)
    ok = tmp_path / "ok.py"
    ok.write_text("import os, sys; print(os.getcwd(), sys.argv[0]); sys.exit(3)\n")
    p = run_alone(ok)
    assert (p.returncode, p.stdout) == (3, f"{tmp_path} {ok}\n")
    for name in ("pt2kit.schema", "pt2kit_portable"):
        bad = tmp_path / "bad.py"
        bad.write_text(f"import {name}\n")
        p = run_alone(bad)
        assert p.returncode == 1 and p.stderr.splitlines()[-1].startswith("ModuleNotFoundError"), p.stderr


def test_start_env_is_the_run_before_any_test_wrote_into_it(monkeypatch):
    """What a compile in the test process writes into os.environ does not reach the tools a test starts."""
    monkeypatch.setenv("_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR", "140000000")
    env = start_env(PT2KIT_STORE="/tmp/st")
    assert "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR" not in env
    assert env["PT2KIT_STORE"] == "/tmp/st" and env["PATH"]
    shown = run([sys.executable, "-c", "import os; print(os.environ.get('_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR'))"],
                env=start_env())
    assert shown.stdout == b"None\n"
