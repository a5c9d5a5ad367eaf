"""What the noxfile knows of the repo's packages; no pt2kit import, stdlib only.

- ``PACKAGES``: distribution name -> source folder, for every package in the repo; ``import_name``: what imports it.
- ``requirements``/``local_closure``: what a package declares, and the local packages it needs, transitively.
- ``wheel``: a package's wheel, built once per content (below), as the requirement a session installs.
- ``floors_of``/``floor_source``: the oldest pt2kit-* versions a package accepts, and their code from git history
  (the floors session installs those).

Functions that take ``session`` use only its ``log`` and ``error`` (a nox Session).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _package_dirs() -> dict[str, Path]:
    """Distribution name -> source directory, for every package in the repo."""
    dirs = [ROOT / "schemas", *sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))]
    return {tomllib.loads((d / "pyproject.toml").read_text())["project"]["name"]: d for d in dirs}


PACKAGES = _package_dirs()


def requirement_name(dep: str) -> str:
    return re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0].strip()


def requirements(directory: Path, extras: str = "") -> list[str]:
    """The package's dependencies, and those of the extras named (``"test,browser"``)."""
    project = tomllib.loads((directory / "pyproject.toml").read_text())["project"]
    optional = project.get("optional-dependencies", {})
    return [*project.get("dependencies", []), *(d for e in filter(None, extras.split(",")) for d in optional.get(e, []))]


def local_closure(name: str, extras: str = "") -> list[str]:
    """The package (with the extras named) and the local packages it depends on, transitively."""
    seen: list[str] = []

    def visit(n: str) -> None:
        if n in seen:
            return
        seen.append(n)
        for dep in requirements(PACKAGES[n], extras if n == name else ""):
            dep_name = requirement_name(dep)
            if dep_name in PACKAGES:
                visit(dep_name)

    visit(name)
    return seen


# uv builds a source directory again every time a command names one (`-e packages/kdiff` or a floor's
# folder): ~100 builds of our 11 packages in a CI run, each an isolated hatchling environment and two
# backend calls. Each package is built into a wheel once instead, kept under .nox/_wheels by a hash of
# what goes into it (pyproject.toml and src/, so an edit builds afresh), and every session installs the
# wheel: a package is tested as a user installs it (a file missing from its wheel fails here too).
WHEELS = ROOT / ".nox" / "_wheels"


def _content_key(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted([directory / "pyproject.toml", *(directory / "src").rglob("*")]):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(f"{path.relative_to(directory)}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _build_wheel(out: Path, directory: Path) -> list[str]:
    try:
        import uv  # installed beside nox by the README's command

        return [uv.find_uv_bin(), "build", "--wheel", "-q", "-o", str(out), str(directory)]
    except ImportError:
        return [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(directory)]


def wheel(session: Any, name: str, directory: Path, extras: str = "") -> str:
    """A requirement installing ``name`` (with ``extras``) from its wheel built from ``directory``."""
    dest = WHEELS / f"{name}-{_content_key(directory)}"
    if not dest.exists():
        WHEELS.mkdir(parents=True, exist_ok=True)
        part = Path(tempfile.mkdtemp(dir=WHEELS, prefix=f".{name}-"))  # two nox runs at once build apart
        session.log(f"building {name}'s wheel from {directory.relative_to(ROOT)}")
        subprocess.run(_build_wheel(part, directory), check=True)
        try:
            part.rename(dest)
        except OSError:  # the other run was first: same content, same wheel
            shutil.rmtree(part, ignore_errors=True)
    (wheel,) = dest.glob("*.whl")
    return f"{name}[{extras}] @ {wheel.as_uri()}" if extras else f"{name} @ {wheel.as_uri()}"


def project(directory: Path) -> dict:
    return tomllib.loads((directory / "pyproject.toml").read_text())


def import_name(name: str) -> str:
    """What ``import`` names package ``name``: ``pt2kit.kdiff`` for a package under ``src/pt2kit/``, else the one
    top-level module its ``src/`` holds (pt2kit-portable's ``pt2kit_portable``)."""
    src = PACKAGES[name] / "src"
    if (src / "pt2kit").is_dir():
        return "pt2kit." + name.removeprefix("pt2kit-")
    (module,) = src.glob("*.py")
    return module.stem


def floors_of(directory: Path, extras: str = "") -> dict[str, tuple[int, ...]]:
    """pt2kit-* dependency -> the floor (``>=X.Y``) the package at ``directory`` declares for it (its
    extras' too, where named: a test extra's tools are installed at their floors as well)."""
    floors = {}
    for dep in requirements(directory, extras):
        name = requirement_name(dep)
        if name in PACKAGES:
            floor = re.search(r">=\s*([0-9.]+)", dep)
            if floor is None:
                raise ValueError(f"{directory.name}: {dep!r} has no >= floor")
            floors[name] = _version(floor[1])
    return floors


def _version(text: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in text.split("."))
    return parts + (0,) * (3 - len(parts))


def _text_version(text: str) -> tuple[int, ...] | None:
    # pt2kit_portable's is VERSION: a repro.py embeds the module's definitions, where a __version__ would be the
    # repro's own
    found = re.search(r"^(?:__version__|VERSION) = [\"']([0-9.]+)[\"']", text, re.M)
    return _version(found[1]) if found else None


def tree_version(name: str) -> tuple[int, ...]:
    """The version of package ``name`` in this working tree."""
    init = PACKAGES[name] / project(PACKAGES[name])["tool"]["hatch"]["version"]["path"]
    version = _text_version(init.read_text())
    if version is None:
        raise ValueError(f"{init}: no __version__ line")
    return version


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout


def floor_source(session: Any, name: str, floor: tuple[int, ...]) -> tuple[Path, tuple[int, ...]]:
    """The package as it was at the first commit whose version is ``floor`` or newer: the oldest code
    pip could pick for ``>=floor`` (a version's first commit holds the least of what that version has).
    The working tree where no commit has it yet (a bump not committed). Extracted once under .nox/."""
    rel = PACKAGES[name].relative_to(ROOT)
    init = rel / project(PACKAGES[name])["tool"]["hatch"]["version"]["path"]
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        session.error("nox -s floors builds old versions from git history: a shallow clone has none")
    for commit in _git("rev-list", "--reverse", "HEAD", "--", str(init)).split():
        version = _text_version(_git("show", f"{commit}:{init}"))
        if version is not None and version >= floor:
            break
    else:
        version = _text_version((ROOT / init).read_text())
        if version is None or version < floor:
            session.error(f"{name} {'.'.join(map(str, floor))} is required but no version of it is that new")
        return PACKAGES[name], version
    dest = ROOT / ".nox" / "_floors" / f"{name}-{'.'.join(map(str, version))}-{commit[:12]}"
    if not dest.exists():
        part = dest.with_name(dest.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, str(rel)], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(part)], input=archive, check=True)
        part.rename(dest)
    return dest / rel, version
