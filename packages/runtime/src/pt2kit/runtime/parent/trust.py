"""What a stream may make a tool do: the trust model, in one place.

A stream is data. It may *name* a model file on this machine, and a tool reading it runs that file,
as it would run one given on the command line; a stream never *carries* code, and nothing else it
names is ever executed. Guarantees, for `model` records read from a pipe:

* The file must be a regular ``*.py`` file outside the Python installation (so ``os.py`` or
  ``antigravity.py`` are refused), judged by the real path it resolves to (a ``sneaky.py`` that
  links to ``evil.txt``, or into site-packages, is refused, naming both), and it is executed as Python source only: never as bytecode
  (``.pyc``) or as an extension module (``.so``), whatever its name.
* ``FILE.py:NAME`` must name a plain function defined in that file (``os.py:abort`` is refused
  twice over); :func:`pt2kit.runtime.common.modelfile.load_model` checks that in the child.
* A file that lies in a store's ``blobs/<ab>/`` directory under a ``<sha256>.py`` name (what ``pt2kit
  capture`` writes) must hash to that name: a captured model file edited after capture is refused.
* The file is named on stderr before it runs.
* Config settings that name programs, paths, commands, libraries, hosts, compiler flags or code
  hooks (``cpp.cxx``, ``*_path``, ``*_dir``, ``*cmd``, ``*_pass``, ``*opt_level`` ...) with a value
  that is not a plain boolean or number, any remote cache, and any value that looks like a path or
  a command-line flag, are refused unless the same key is given on the command line (whose value
  is then the one used). ``--no-config-from-stream`` drops the stream's
  config altogether.
* A model record's ``settings`` (what the worker that wrote it had, the file's own included) are
  taken under its ``config`` by the same rules, except that a setting they refuse is dropped, not
  refused (:func:`stream_settings`): the file sets its own again when it runs.
* Each refusal is one line and exit 2, before anything of that model runs.

Nothing here imports torch: it runs in the parent, before the child starts.

Not guaranteed:

* That a model file named by a stream is harmless: these checks narrow *which* files run (the same
  ones a user could name on the command line), not what they do. Pipe streams you would run by hand.
* That the file is the one the upstream tool ran, or unchanged between this check and the child
  loading it: only a store blob's name is compared with its hash, and only at this check.
* That every dangerous config setting is caught: keys are judged by their names and their values'
  form, so a setting torch adds later under a name none of the patterns match passes (the refused
  patterns are kept with torch's own repro writer's list in mind, not proven complete).
"""

from __future__ import annotations

import os
import re
import sysconfig
from pathlib import Path

from ..common.errors import UsageError

# The last dotted part of a setting that names something outside the model: a program, a file or
# directory, a library, a host, a remote cache, a hook or a class to import, flags for a compiler.
_UNSAFE_PART = re.compile(
    r"""(^|_)(
        cxx|cc|compiler|cmd|command|commands|exe|executable|binary|program|shell|launcher|linker|ld
      | path|paths|dir|dirs|directory|root|home|file|files|filename|logpath|output|prefix
      | lib|libs|library|libraries|include|includes|shim|plugin|plugins
      | url|uri|host|hosts|port|address|remote|upload|tar
      | fn|func|function|hook|hooks|pass|passes|callback|callbacks|class|determinator|estimator|estimation
      | override|overrides|allowlist|ignorelist|module|modules|presets|metadata|table
      | flags|cflags|ldflags|opt_level|march|arch|isa|target|version|method
    )s?$""",
    re.VERBOSE,
)
_UNSAFE_ANYWHERE = re.compile(r"unsafe|custom|external|cutlass|rocm|oneapi|cuda_cxx|_dir_|_path_")


_PLAIN_VALUE = re.compile(r"(?i)true|false|yes|no|on|off|none|null|[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")


def unsafe_config_reason(key: str, value: str) -> str | None:
    """Why a stream may not set ``key=value`` (None when it may): judged on the text alone.

    A remote cache is never switched on from a stream (its artifacts are code from elsewhere). A
    boolean or a number cannot name anything, so it is allowed for any other key; a string, list
    or dict is refused for a key whose name says program, path, library, host, flags or hook, and
    for any key when it looks like a path or a command-line flag.
    """
    low = key.lower()
    v = value.strip()
    if ("remote" in low or "upload" in low) and v.lower() not in ("false", "0", "no", "off", "none", "null"):
        return "reaches a remote cache or host"
    if _PLAIN_VALUE.fullmatch(v):
        return None
    if _UNSAFE_PART.search(low.rsplit(".", 1)[-1]) or _UNSAFE_ANYWHERE.search(low):
        return "names a program, path, library, host, compiler flags or a code hook"
    if "/" in v or "\\" in v or os.sep in v:
        return "its value looks like a path"
    if v.startswith("-"):
        return "its value looks like a command-line flag"
    return None


def stream_config_for(stream: dict[str, str], cli: dict[str, str], where: str, *, use: bool = True,
                      what: str = "the model record") -> dict[str, str]:
    """The settings a piped model runs with: the stream's (when ``use``) under the command line's."""
    if not use:
        return dict(cli)
    for key, value in stream.items():
        if key in cli:
            continue
        reason = unsafe_config_reason(str(key), str(value))
        if reason:
            raise UsageError(
                f"{where}: {what} sets --config {key}, which a stream may not: it {reason}; "
                f"give --config {key}=VALUE yourself, or pass --no-config-from-stream"
            )
    return {**stream, **cli}


def stream_settings(settings: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """A model record's ``settings`` (what the upstream worker had) that a stream may set, and the keys
    it may not. Those are dropped, not refused: the model file sets its own again when it runs here;
    only what the upstream environment alone gave (a path, a host) is not taken from a stream."""
    kept = {k: v for k, v in settings.items() if unsafe_config_reason(str(k), str(v)) is None}
    return kept, sorted(set(settings) - set(kept))


def _installation_dirs() -> list[str]:
    dirs = set()
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            dirs.add(os.path.realpath(sysconfig.get_paths()[name]))
        except (KeyError, OSError):
            pass
    return sorted(dirs)


def check_model_file(file: str, entry: str | None, where: str) -> str:
    """The ``FILE.py[:NAME]`` spec a piped `model` record may run, or UsageError saying why not."""
    from ..common.modelfile import parse_spec

    if not file or "\x00" in file:
        raise UsageError(f"{where}: the model record names no file")
    path = Path(file)
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        raise UsageError(f"{where}: {file}: no such model file") from None
    # judged by what the name resolves to: a sneaky.py that links to evil.txt is not a .py file
    shown = file if real == os.path.abspath(path) else f"{file} (which resolves to {real})"
    if path.suffix != ".py" or Path(real).suffix != ".py":
        raise UsageError(f"{where}: the model record names {shown}, not a .py file: a stream runs only Python source")
    if entry is not None and not entry.isidentifier():
        raise UsageError(f"{where}: the model record's entry {entry!r} is not a Python name")
    spec = f"{file}:{entry}" if entry else file
    if parse_spec(spec) != (path, entry):
        raise UsageError(f"{where}: the model record's file {file!r} cannot be named unambiguously")
    try:
        ok = os.path.isfile(real)
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise UsageError(f"{where}: {file}: no such model file")
    if _installed(real):
        raise UsageError(f"{where}: {shown} is part of a Python installation, not a model file")
    if _blob_edited(real):
        raise UsageError(f"{where}: {shown} is a store blob whose bytes do not hash to its name: the model file "
                         "was changed after it was stored")
    return spec


_BLOB_NAME = re.compile(r"[0-9a-f]{64}\.py")


def _blob_edited(real: str) -> bool:
    """A file named ``blobs/<ab>/<sha256>.py`` (the store's form) whose bytes hash otherwise."""
    import hashlib

    p = Path(real)
    if not (_BLOB_NAME.fullmatch(p.name) and p.parent.name == p.name[:2] and p.parent.parent.name == "blobs"):
        return False
    h = hashlib.sha256()
    with open(real, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() != p.stem


def _installed(real: str) -> bool:
    """Inside this interpreter's stdlib or site-packages, or any other Python's (``lib/python3.X``,
    ``site-packages``, ``dist-packages``). pt2kit's own model files (benchrun's zoo) are the exception."""
    parts = Path(real).parts
    for i, part in enumerate(parts):
        if part in ("site-packages", "dist-packages") or (
            re.fullmatch(r"python\d+(\.\d+)?t?", part) and i > 0 and parts[i - 1] in ("lib", "lib64", "Lib")
        ):
            rest = [p for p in parts[i + 1 :] if p not in ("site-packages", "dist-packages")]
            return not (rest and rest[0] == "pt2kit")
    for d in _installation_dirs():
        if os.path.commonpath([d, real]) == d:
            return Path(os.path.relpath(real, d)).parts[:1] != ("pt2kit",)
    return False
