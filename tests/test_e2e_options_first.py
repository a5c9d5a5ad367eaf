"""A bad option of a tool that takes --backend is its one line and exit 2 before anything is read, run or
said. Before, a piped stream got "running model file ... named by the stream" (and the stream forwarded)
and only then the error, from the first model's worker (kdiff's --backend FILE.py:NAME, a name torch does
not register, --device, --config; guardscan's and minify's the same); guardscan given a backend name torch does not
know crashed (exit 3), and given FILE.py:NAME handed that string to torch.compile."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from pt2kit.schema import Header, Model, Store
from pt2kit.testkit import module, run, start_env

MLP = Path(__file__).resolve().parents[1] / "packages" / "kdiff" / "tests" / "models" / "mlp.py"


def _stream(tmp_path: Path) -> bytes:
    """One model record, its file in the store, as a tool upstream writes it."""
    store = Store(tmp_path / "store")
    code = store.put(MLP.read_bytes(), "text/x-python", ".py")
    recs = [Header(v=1, run="r", tool="fxcheck", tool_version="0", argv=["fxcheck"], time="t", host="h", python="3",
                   store=str(store.root)),
            Model(v=1, run="r", model="mlp.py", file=str(store.path(code)), inputs=[])]
    return b"".join(msgspec.json.encode(x) + b"\n" for x in recs)


@pytest.mark.parametrize(("tool", "args", "line"), [
    # told without torch, in the parent: the file, the NAME, a backend guardscan cannot hand torch.compile
    ("kdiff", ["--backend", "nothere.py:fn"], "kdiff: error: --backend nothere.py:fn: no such file nothere.py"),
    ("kdiff", ["--backend", f"{MLP}:"], f"kdiff: error: --backend {MLP}:: expected FILE.py:NAME or module:attr"),
    ("guardscan", ["--backend", f"{MLP}:model"], f"guardscan: error: --backend {MLP}:model: guardscan takes a name "
                                                 "torch registers"),
    # told by torch, in a worker before the stream is read (one torch import, ~3 s)
    ("guardscan", ["--device", "bogus"], "guardscan: error: --device bogus: Expected one of cpu, cuda"),
    ("minify", ["--backend", "nosuch"], "minify: error: backend 'nosuch': torch registers no backend of that name"),
])
def test_a_bad_option_is_one_line_before_the_stream_is_read(tmp_path, tool, args, line):
    r = run(module(f"pt2kit.{tool}", *args), stdin=_stream(tmp_path), env=start_env(PT2KIT_STORE=str(tmp_path)),
            cwd=tmp_path)
    assert r.code == 2, r.stderr
    assert r.stdout == b"" and r.stderr.count("\n") == 1 and r.stderr.startswith(line), r.stderr
