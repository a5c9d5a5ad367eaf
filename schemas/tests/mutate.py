"""Hypothesis strategies that mutate real streams (tests/streams/) the way a hostile or broken
writer would: any value replaced, strings with control codes, `$...$`, markup or invalid UTF-8,
bytes flipped, lines cut. Shared by the schema's and reportgen's fuzz tests."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

STREAMS = Path(__file__).resolve().parents[2] / "tests" / "streams"


def real_lines() -> list[bytes]:
    lines = [ln for f in sorted(STREAMS.glob("*.ndjson")) for ln in f.read_bytes().splitlines() if ln.strip()]
    assert len(lines) > 100, f"the real streams in {STREAMS} are missing"
    return lines


NASTY = st.sampled_from([
    "$x^$", "$\\frac{$", "\x1b]0;owned\x07\x1b[2J", "<script>alert(1)</script>", "javascript:alert(1)",
    "a|b`c`*d*[e](f)", "/etc/passwd", "../../etc/passwd", "x" * 300, "‮evil", "nan", "inf", "", "\n\n",
])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text() | NASTY,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8) | NASTY, c, max_size=4),
    max_leaves=8,
)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _set(obj: Any, path: tuple, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


@st.composite
def mutated_stream(draw: Any) -> bytes:
    lines = list(real_lines())
    start = draw(st.integers(0, len(lines) - 1))
    lines = lines[start : start + draw(st.integers(1, 40))]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["value", "value", "string", "utf8", "bytes", "cut"]))
        if how in ("value", "string"):
            try:
                obj = json.loads(lines[i])
            except ValueError:  # already broken by an earlier mutation
                continue
            paths = [p for p in _paths(obj) if p[-1] not in ("kind",) or how == "value"]
            if paths:
                path = draw(st.sampled_from(paths))
                _set(obj, path, draw(NASTY if how == "string" else JSON))
            lines[i] = json.dumps(obj, allow_nan=True).encode()
        elif not lines[i]:  # cut to nothing by an earlier mutation
            continue
        elif how == "utf8":
            quotes = [k for k, b in enumerate(lines[i]) if b == ord('"')]
            if not quotes:
                continue
            k = draw(st.sampled_from(quotes)) + 1
            lines[i] = lines[i][:k] + draw(st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xe2\x82"])) + lines[i][k:]
        elif how == "bytes":
            k = draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:k] + bytes([draw(st.integers(0, 255))]) + lines[i][k + 1 :]
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    return b"\n".join(lines) + b"\n"


class Endless(io.RawIOBase):
    """``head``, then /dev/zero on a pipe: bytes with no newline, for ever; counts what was taken."""

    def __init__(self, head: bytes = b"") -> None:
        self.head, self.taken = head, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        assert self.taken < 64 << 20, "the reader did not stop at the line cap"
        n = len(b) if not self.head else min(len(b), len(self.head))
        b[:n], self.head = self.head[:n] or bytes(n), self.head[n:]
        self.taken += n
        return n


HOSTILE_CAP = 64 * 1024  # the $PT2KIT_LINE_CAP a reader runs under in hostile_stream's tests
_MODEL = re.compile(rb'"kind"\s*:\s*"model"')


@st.composite
def hostile_stream(draw: Any, models: bool = True) -> tuple[bytes, bool]:
    """(bytes, endless) for a reader run with ``PT2KIT_LINE_CAP=64K``: a real stream mutated, cut at
    any byte, or holding a line past the cap; when ``endless``, the bytes are followed by zero bytes
    with no newline for ever (/dev/zero, a writer gone mad). ``models=False`` drops every `model`
    record, so a tool that would run the model a stream names only reads it."""
    how = draw(st.sampled_from(["mutated", "cut", "oversized", "endless"]))
    if how == "mutated":
        data = draw(mutated_stream())
    else:
        lines = real_lines()
        start = draw(st.integers(0, len(lines) - 1))
        data = b"\n".join(lines[start : start + draw(st.integers(1, 20))]) + b"\n"
        k = draw(st.integers(0, len(data)))
        if how == "cut":
            data = data[:k]
        elif how == "oversized":
            head = draw(st.sampled_from([b"", b"{", b'{"kind":"graph","v":1,"run":"r","code":"']))
            data = data[:k] + head + b"x" * (HOSTILE_CAP + draw(st.integers(1, 3000))) + \
                draw(st.sampled_from([b"\n", b'"}\n', b""])) + data[k:]
    if not models:
        data = b"\n".join(ln for ln in data.split(b"\n") if not _MODEL.search(ln))
    return data, how == "endless"


# The reader runs as a grandchild of a small launcher, which sets RLIMIT_AS and reads the reader's own peak
# RSS from wait4: a child forked straight from pytest (as preexec_fn forces) starts its ru_maxrss at
# pytest's size, and pytest holds torch after any in-process test (349 MiB "peak" for `pt2kit cat` on
# an empty stdin).
_LAUNCH = """
import os, resource, sys
n = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (n, n))
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[3], sys.argv[3:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[2], "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def feed(argv: list[str], data: bytes, endless: bool, *, env: dict[str, str], cwd: Any = None,
         address_space: int = 4 << 30, timeout: float = 120) -> tuple[int, str, int]:
    """Run ``argv`` with ``data`` on a pipe to its stdin (then zero bytes for ever when ``endless``),
    under an RLIMIT_AS of ``address_space``: (exit code, stderr, its own peak RSS in bytes)."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile
    import threading

    def write() -> None:
        try:
            assert p.stdin is not None
            p.stdin.write(data)
            while endless:
                p.stdin.write(bytes(1 << 16))
            p.stdin.close()
        except (OSError, ValueError):  # the reader stopped: a broken pipe
            pass

    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile() as rss:
        p = subprocess.Popen([sys.executable, "-c", _LAUNCH, str(address_space), rss.name, *argv], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd, start_new_session=True)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        killer = threading.Timer(timeout, os.killpg, (p.pid, signal.SIGKILL))  # the launcher and the reader
        killer.start()
        p.wait()
        killer.cancel()
        writer.join(10)
        err.seek(0)
        peak = rss.read().strip()
        return p.returncode, err.read().decode(errors="replace"), int(peak or 0) * 1024
