"""The torch.compile backend a tool tests: ``--backend`` as given, else the one the script behind a piped
`model` record compiled with (``pt2kit capture``'s ``captured.backend``), else Inductor.

Trust (:mod:`..parent.trust`): a stream names a backend, it never hands one over. :func:`stream_backend` is the one
rule for what a stream may name: a name torch registers (:func:`registered`: built-in, debug and
TESTING_ONLY ones, third-party ones installed through torch's ``torch_dynamo_backends`` entry points) and
``aoti`` travel; a backend that is code (the script's function, an ``aot_autograd`` object, a record's
``backend`` edited to ``FILE.py:NAME``, ``module:attr`` or a dotted name) is never imported because a
stream names it: the tool says in one line what the stream named and the ``--backend`` that hands it over,
and exits 2. The user's own ``--backend`` on the command line is theirs: it wins, and is never checked
here.

Guarantees: never Inductor in place of the script's backend; :func:`piped_backend` and
:func:`handover` are torch-free (a tool's parent calls them); :func:`check_registered` asks torch (a
worker calls it) and refuses a name torch does not register here, so an unknown name is never a
"compile error" to minify.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from .errors import UsageError

INDUCTOR = "inductor"
AOTI = "aoti"  # AOT Inductor: torch.export, aoti_compile_and_package, load, run; not a torch.compile name

__all__ = ["AOTI", "DECOMPOSITION", "INDUCTOR", "check_registered", "code_handover", "handover", "inductor_options", "is_code", "piped_backend",
           "registered", "stream_backend"]

# what a backend name torch registers looks like (torch's own, an entry point's): never a path, a
# module:attr or a dotted name, which a worker would import as code
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def is_code(spec: str) -> bool:
    """Whether ``--backend`` names code (``FILE.py:NAME``, ``module:attr``) rather than a registered name."""
    return ":" in spec


def stream_backend(name: str, label: str, tool: str, diff: bool = False) -> str:
    """``name``, a backend a stream names (a `model` record's ``captured.backend``, a failing diff's ``test``),
    where a stream may name it: the one rule every tool asks. Only a name torch registers travels: a word
    of that shape here (torch-free: a tool's parent asks), then looked up in torch's registry, never
    imported, by :func:`check_registered` in the worker before anything compiles with it. Anything else (a
    path, ``module:attr``, a dotted name) is code the stream would make ``tool`` import: UsageError, one
    line naming it and the ``--backend`` the user gives to hand code over. ``diff``: the name is the
    --backend a diff upstream compiled with (``kdiff --backend FILE.py:NAME | minify``), said as such."""
    if _NAME.fullmatch(name):
        return name
    if diff:
        raise UsageError(f"{label}: the diff compiled it with --backend {name}, code a stream does not run: "
                         f"give {tool} --backend {shlex.quote(name)}")
    raise UsageError(f"{label}: the stream names code as its backend ({name}), which {tool} will not import: a "
                     "stream names only a backend torch registers; to test your own, give --backend FILE.py:NAME")


def piped_backend(given: str | None, captured: Any, label: str, tool: str, warn: Any = None,
                  config: dict[str, str] | None = None) -> str:
    """The backend to test a piped model record with: ``given`` (``--backend``, the user's word wins),
    else the name its script compiled with (``captured``: the record's :class:`~pt2kit.schema.Captured`,
    or None), else Inductor. A script's backend that is code: UsageError, the :func:`handover` line; a
    ``captured.backend`` no registered name (:func:`stream_backend`): UsageError, its line.
    torch.compile's ``mode`` and ``options`` travel as the Inductor settings they are (:func:`inductor_options`);
    one that cannot (not a literal, or given to another backend): UsageError saying which. Code the script
    installed into the compiler (``captured.code_settings``) that ``config`` (the command line's --config)
    or ``given`` does not hand over: UsageError, the :func:`code_handover` line. ``warn`` is unused."""
    if captured is not None and getattr(captured, "code_settings", None):
        code_handover(captured.code_settings, config or {}, given, label, tool)
    if given is not None:
        return given
    if captured is None or not captured.backend:
        return INDUCTOR
    if captured.backend_code:
        raise UsageError(handover(captured, label, tool))
    stream_backend(captured.backend, label, tool)
    applied = inductor_options(captured)
    lost = [f"mode={captured.mode}"] if captured.mode and not captured.mode_options else []
    lost += [f"option {k}={v}" for k, v in sorted({**captured.mode_options, **captured.options}.items())
             if f"inductor.{k}" not in applied]
    if lost:  # the script's compiler never runs without what it was told: applied, or said and exit 2
        raise UsageError(f"{label}: the script compiled it with {captured.backend} and {', '.join(lost)}, which "
                         f"{tool} cannot apply from a stream (only Inductor's literal settings travel); give "
                         "--backend, and Inductor settings as --config inductor.KEY=VALUE")
    return str(captured.backend)


def inductor_options(captured: Any) -> dict[str, str]:
    """``torch.compile(options=...)`` the script gave Inductor, as the settings they are (``inductor.KEY``:
    VALUE as --config takes it), which a piped record's settings take in (:mod:`..parent.piped`); an option
    whose repr is no literal is left out (:func:`piped_backend` says so)."""
    import ast

    if captured is None or captured.backend not in (INDUCTOR, AOTI):  # AOTI: aoti_compile_and_package's configs
        return {}
    out = {}
    # mode first, then options over it: torch.compile's wrapper applies them in that order
    for key, text in {**captured.mode_options, **captured.options}.items():
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        out[f"inductor.{key}"] = value if isinstance(value, str) else text
    return out


def handover(captured: Any, label: str, tool: str) -> str:
    """One line: which backend the script compiled ``label`` with, that it is code a stream does not hand
    over, and the exact ``--backend`` that does (or what to do first where no name reaches it)."""
    file, _, qual = str(captured.backend_code).rpartition(":")
    where = f"defined in the script, {file}" if captured.backend_in_script else f"defined in {file}"
    said = (f"{label} was compiled with the script's own backend {captured.backend} ({where}): a stream never makes "
            f"{tool} import code")
    if not file.endswith(".py"):
        return f"{said}; put it in a file and give --backend FILE.py:NAME"
    if not qual.isidentifier():
        return (f"{said}, and no module-level name reaches it ({qual}); bind it to one in {file} "
                f"(NAME = ...) and give --backend {shlex.quote(file + ':NAME')}")
    return f"{said}; to test it, give --backend {shlex.quote(f'{file}:{qual}')}"


DECOMPOSITION = "decomposition:"  # a code_settings key: an op's decomposition the script put in Inductor's table


def code_handover(code: dict[str, str], config: dict[str, str], given: str | None, label: str, tool: str) -> None:
    """UsageError, one line, for the first piece of code the script installed into the compiler (``code``:
    ``captured.code_settings``) that the command line does not hand over: an Inductor hook setting
    (``inductor.post_grad_custom_post_pass``) unless ``config`` sets the same key (the flag said is
    ``--config KEY=FILE.py:NAME``, loaded as a ``--backend FILE.py:NAME`` is); a decomposition unless
    ``given`` (``--backend``: a backend of the user's, which installs it). Never a silent run without it."""
    for key, where in sorted(code.items()):
        file, _, qual = where.rpartition(":")
        if key.startswith(DECOMPOSITION):
            if given is not None:
                continue
            op = key.removeprefix(DECOMPOSITION)
            raise UsageError(
                f"{label}: the script installed its own decomposition of {op} into Inductor's table ({where}): a stream "
                f"never makes {tool} import code; give --backend FILE.py:NAME, a backend that installs it and compiles")
        short = key.split(".", 1)[1] if key.startswith("inductor.") else key
        if key in config or short in config:
            continue
        said = f"{label}: the script set {key} to code ({where}): a stream never makes {tool} import code"
        if not file.endswith(".py") or not qual.isidentifier():
            raise UsageError(f"{said}; bind it to a module-level name in a file and give --config {short}=FILE.py:NAME")
        raise UsageError(f"{said}; to run with it, give --config {shlex.quote(f'{short}={file}:{qual}')}")


def registered() -> list[str]:
    """Every name ``torch.compile(backend=NAME)`` takes here: torch's own list with its debug and
    experimental ones (``list_backends(exclude_tags=())``), third-party ones installed through its entry
    points included (named, not imported)."""
    import torch._dynamo

    return list(torch._dynamo.list_backends(exclude_tags=()))


def check_registered(name: str) -> None:
    """UsageError unless ``name`` is ``aoti`` or a backend torch registers here (where the record's script
    registered its own, or a third-party one is not installed here, torch.compile would raise: never
    counted as the backend's failure)."""
    if name == AOTI or name in registered():
        return
    raise UsageError(f"backend {name!r}: torch registers no backend of that name here (it has "
                     f"{', '.join(n for n in registered() if 'TESTING' not in n)} and the TESTING_ONLY ones; aoti "
                     "for AOT Inductor); a backend of your own: --backend FILE.py:NAME")
