"""Running a repro.py the way its contract says it runs: with torch alone, pt2kit not importable.

``run_alone(path)`` runs ``python path`` in the repro's folder and returns a
:class:`subprocess.CompletedProcess` (text). In it, importing ``pt2kit`` or ``pt2kit_portable`` fails, so a
repro that leaned on our code fails the test rather than a user's run.

Where the test run has a fork server (:mod:`pt2kit.runtime.worker.forkserver`, which nox starts around pytest, named
by ``PT2KIT_FORKSERVER``) and the run's environment is the one it imported under, the repro runs in a fork of
that warm process with every pt2kit module dropped from ``sys.modules`` and blocked first: torch, Dynamo and
Inductor are imported, nothing of ours is, and ``sys.argv``/``sys.path[0]`` are what ``python repro.py`` sets
(0.5 s a run instead of 4-10 s of imports on 2 cores). Otherwise (no server, pt2kit-runtime missing, another
environment: a test's own variables, PYTHONPATH say) a fresh isolated Python (``-I``) runs it.

Not guaranteed in the fork: what torch read from the environment at import is the server's (which is why a
run whose environment differs is not forked), and more of torch than the repro imports is imported already.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

# the fork runs this first, then the repro as __main__
_ALONE = """import os, runpy, sys
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
for name in [m for m in sys.modules if m.split(".")[0] in ("pt2kit", "pt2kit_portable")]:
    del sys.modules[name]
sys.modules["pt2kit"] = sys.modules["pt2kit_portable"] = None
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_alone(path: str | os.PathLike[str], env: Mapping[str, str] | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess:
    """``python path`` in its folder with ``env`` (this process's by default), pt2kit not importable; past
    ``timeout`` seconds it is killed and :class:`subprocess.TimeoutExpired` raised."""
    path = Path(path).resolve()
    env = dict(os.environ if env is None else env)
    forked = _forked(path, env, timeout)
    if forked is not None:
        return forked
    code = (f"import sys, runpy; sys.modules['pt2kit'] = sys.modules['pt2kit_portable'] = None; "
            f"sys.argv = [{str(path)!r}]; runpy.run_path({str(path)!r}, run_name='__main__')")
    return subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd=path.parent,
                          env=env, timeout=timeout)


def _forked(path: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess | None:
    try:
        from pt2kit.runtime.parent.forkclient import ENV, spawn
    except ImportError:
        return None
    if not env.get(ENV):
        return None
    alone = Path(tempfile.gettempdir()) / f"pt2kit-run-alone-{os.getpid()}.py"  # not in the repro's folder: the test's
    alone.write_text(_ALONE)
    proc = spawn(None, [str(alone), str(path)], env, cwd=str(path.parent))
    if proc is None:  # refused: another environment
        return None
    proc.stdin.close()
    out: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda k=k, f=f: out.__setitem__(k, f.read()), daemon=True)
               for k, f in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for r in readers:
        r.start()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    finally:
        for r in readers:
            r.join(10)
    return subprocess.CompletedProcess([sys.executable, str(path)], code,
                                       out.get("stdout", b"").decode(errors="replace"),
                                       out.get("stderr", b"").decode(errors="replace"))
