"""pt2kit's sessions. `nox -s lint tests e2e real browser` is the test command (what .ci/run runs, after
installing nox and uv, in the README's one line); `nox -s demo` the main job.

Every package is tested in a virtualenv of its own holding only what it declares (plus its test
extra), so an undeclared import fails here rather than on a user's machine. torch comes from
constraints.txt, never from a lock.
"""

from __future__ import annotations

import os
import shutil
import sys
import tomllib
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

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))


def _pytest_workers() -> str:
    """pytest-xdist's worker count: one per core, at most 4. Most tests wait on a tool's child that is
    mostly one thread (torch's import, a Dynamo trace, one g++ at a time): serially aotiprint's and
    guardscan's tests used one core's CPU time, minify's (its own worker pool) 1.6. Tests that share one
    slow run (a module fixture, a cache) carry ``xdist_group`` marks and `--dist loadgroup` keeps each group on one worker. ``-- -n 0`` runs serially."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return str(min(cores, 4)) if cores > 1 else "0"


# pytest-xdist is the runner's, not the packages' (their test extras stay what a user's pytest needs)
XDIST = "pytest-xdist"
# --durations: CI's log names the slowest tests, where the next minutes of a run are to be won
PYTEST = ("pytest", "-q", "-p", "no:cacheprovider", "-n", _pytest_workers(), "--dist", "loadgroup", "--durations=12")


def _package_dirs() -> dict[str, Path]:
    """Distribution name -> source directory, for every package in the repo."""
    dirs = [ROOT / "schemas", *sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))]
    return {tomllib.loads((d / "pyproject.toml").read_text())["project"]["name"]: d for d in dirs}


PACKAGES = _package_dirs()


def _local_closure(name: str) -> list[str]:
    """The package and the local packages it depends on, transitively."""
    seen: list[str] = []

    def visit(n: str) -> None:
        if n in seen:
            return
        seen.append(n)
        deps = tomllib.loads((PACKAGES[n] / "pyproject.toml").read_text())["project"].get("dependencies", [])
        for dep in deps:
            dep_name = dep.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip()
            if dep_name in PACKAGES:
                visit(dep_name)

    visit(name)
    return seen


def _install(session: nox.Session, names: list[str], extras: str = "test") -> None:
    args: list[str] = []
    for n in names:
        path = PACKAGES[n]
        args += ["-e", f"{path}[{extras}]" if n == names[0] and extras else str(path)]
    session.install(*CONSTRAINTS, XDIST, *args)


@nox.session(python=PYTHON)
@nox.parametrize("package", list(PACKAGES))
def tests(session: nox.Session, package: str) -> None:
    """One package's tests, in a virtualenv with only what it declares."""
    _install(session, _local_closure(package))
    # the Triton kernels run on the CPU here, through Triton's interpreter (tests say where they need it)
    session.run(*PYTEST, str(PACKAGES[package] / "tests"), *session.posargs)


@nox.session(python=PYTHON)
def e2e(session: nox.Session) -> None:
    """End-to-end tests across tools (pipes, the README's commands)."""
    session.install(*CONSTRAINTS, "pytest", XDIST, *(f"-e{PACKAGES[n]}[test]" for n in PACKAGES))
    session.run(*PYTEST, "tests", "--ignore", str(ROOT / "tests" / "real"),
                *session.posargs)


@nox.session(python=PYTHON)
def real(session: nox.Session) -> None:
    """Every tool on real transformers models (tests/real), verdicts against PyTorch's own."""
    session.install(*CONSTRAINTS, "pytest", XDIST, "transformers", *(f"-e{PACKAGES[n]}[test]" for n in PACKAGES))
    session.run(*PYTEST, str(ROOT / "tests" / "real"), *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree, and schemas/json up to date with the Structs."""
    session.install(*CONSTRAINTS, "ruff", "-e", str(PACKAGES["pt2kit-schema"]))
    session.run("ruff", "check", ".")
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
def browser(session: nox.Session) -> None:
    """reportgen's page in headless Chromium (Debian's /usr/bin/chromium; no browser download)."""
    _chromium(session)
    _install(session, _local_closure("pt2kit-reportgen"), extras="test,browser")
    session.run(*PYTEST, str(PACKAGES["pt2kit-reportgen"] / "tests" / "browser"),
                *session.posargs)


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The main job on the embedded example: fxcheck examples/tinynet.py | kdiff | minify | reportgen -o pt2kit-out/report.html."""
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


@nox.session(python=PYTHON)
def schemas(session: nox.Session) -> None:
    """Regenerate schemas/json from the Structs."""
    session.install(*CONSTRAINTS, "-e", str(PACKAGES["pt2kit-schema"]))
    session.run("python", "-m", "pt2kit.schema", "export", str(ROOT / "schemas" / "json"))


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The project's own speed against its anchors, measured in the same run (benchmarks/)."""
    session.install(*CONSTRAINTS, *(f"-e{p}" for p in PACKAGES.values()))
    targets = session.posargs or sorted(str(p) for p in (ROOT / "benchmarks").glob("bench_*.py"))
    for t in targets:
        session.run("python", t)
