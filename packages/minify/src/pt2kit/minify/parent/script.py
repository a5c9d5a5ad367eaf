"""A failure no kept graph shows (Dynamo raising while it traced: fullgraph=True over a graph break, an
internal Dynamo error; or the script's own check failing under compile where Dynamo ran it wrong: a guard
missed, a side effect or a mutation mis-traced): no graph to cut, but a script. It is reduced at the source
level by pysource-minimize (shrinkray, the other on PyPI, needs Python 3.12 since 25.12: see the README),
keeping the failure's signature, and the reduced script is the repro.

Guarantees: the signature is minify's own rule (:func:`..judge.verdicts.exception_signature`), embedded by source
in every candidate and in the repro (:mod:`.embed`); an exception whose type is not torch's (an assert of
the script's) is named also by the script's statement it came through last, so the user's own check is the
one kept. The script's own signature is taken from a run of it under that check, never from the record's
text. The failure is the compiler's only where the script runs through with torch.compile disabled
(:data:`.scriptstage.OFF`): a script failing so too is the user's own bug (exit 2, no repro), and every
candidate the reduction keeps passes that run too (else ``assert False`` would be a "repro"). Every run starts
from an empty Inductor cache of its own (``TORCHINDUCTOR_CACHE_DIR``; only the compiled kernels, named by
their source, carry over between runs: :func:`_kernel_folder`), as on a maintainer's clean machine, and
keeps the caches on within it: none fails for an entry an earlier run left (on torch 2.11 a reduced script
dropped the warm-up call a stale-dtype bug needs and "failed" from the cache the original's runs had filled),
and a bug in a cache that one process fills and reads still fails (that one is such a bug: with the caches off
the script runs through). The repro's
stage is told by running it under PyTorch's switches (:mod:`.scriptstage`).

Each candidate is a file in a temporary folder run as ``INTERPRETER candidate.py ARGS`` in a fresh process
(forked from a server that imported torch once, where the command's interpreter is this one: :func:`own_server`)
with a timeout, with the working directory the command ran in (minify's own: triage runs capture and minify
in one folder) and the script's folder on PYTHONPATH, so the script's relative files and sibling modules are
found as in the original run; nothing is written next to the user's files. The repro exits 1 while the failure is there, 0 once the script runs
through, 125 where it fails otherwise. Not guaranteed: a script that reads its own ``__file__`` reads the
candidate's; ``python -m MODULE`` is not reduced, nor a block captured in process (``with pt2kit.capture()``:
there is no script; the line says to save its cells as one for ``pt2kit triage``).
"""

from __future__ import annotations

import ast
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pt2kit.runtime.common.errors import EXIT_CRASH, EXIT_FINDINGS, EXIT_USAGE, UsageError
from pt2kit.runtime.parent.session import Session, torch_version
from pt2kit.runtime.parent.writes import write_output
from pt2kit_portable import escape

from .. import __version__
from ..job import Job
from . import embed, scriptstage
from .scriptstage import OFF, setting, switched

MARK = "repro: "  # the line the check writes on stderr: "repro: reproduced: SIG" or "repro: fails otherwise: SIG"
BUDGET_S = 300.0  # the reduction stops trying candidates after this long: the smallest one found is the repro
JUDGE = '''

# this file, read where it starts: by the time the hook runs, a runner's runpy has put its own __main__ and argv back
_SCRIPT = os.path.realpath(globals().get("__file__") or sys.argv[0])


def _statement(tb):
    # the script's own statement the exception came through last, as ast.unparse writes it (the reducer
    # writes every candidate so): a failure of the user's own check is that check failing, not any other
    import ast
    import linecache

    main = _SCRIPT
    line = None
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) == main:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None:
        return None
    try:
        tree = ast.parse("".join(linecache.getlines(main)))
    except SyntaxError:
        return None
    simple = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and not hasattr(n, "body")
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    said = ast.unparse(simple[-1]) if simple else linecache.getline(main, line)
    return " ".join(said.split())[:200]


def _judged(kind, e, tb):
    # the failure's signature decides: the same one is the bug (1), another is "cannot test" (125); an
    # uncaught exception only gets here, so a script that runs through exits 0
    sys.__excepthook__(kind, e, tb)
    got = exception_signature(e)
    # an error of torch's own names itself; any other (an AssertionError, the script's own check) is named
    # by the script's statement it came through too
    at = None if kind.__module__.partition(".")[0] == "torch" else _statement(tb)
    got = got if at is None else f"{got} at: {at}"
    print(f"repro: raised by {kind.__module__}", file=sys.stderr)
    print(f"repro: {'reproduced' if got == SIGNATURE else 'fails otherwise'}: {got}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1 if got == SIGNATURE else 125)


sys.excepthook = _judged
'''


@dataclass(frozen=True)
class Command:
    python: list[str]  # the interpreter, as the command named it
    script: Path  # the script, resolved against the folder the command ran in
    args: list[str]  # the script's own arguments


# the argv a block captured in process writes in its header (``with pt2kit.capture()``, pt2kit-capture 0.19)
IN_PROCESS = "(in process)"


def command_of(argv: list[str]) -> Command | str:
    """The script of capture's header argv (``capture [FLAGS] -- PYTHON SCRIPT.py ARGS``), or why none; for a
    block captured in process (a notebook's cells), what the user can do instead: there is no script."""
    if argv[1:] == [IN_PROCESS]:  # the cells' code as a script (IPython's %save writes them) is what triage reduces
        return ("a block captured in process (with pt2kit.capture()) has none: save the code it ran as a script "
                "without the capture (in IPython: `%save repro.py N-M`, the cells' numbers) and run "
                "`pt2kit triage -- python repro.py`")
    cmd = argv[argv.index("--") + 1:] if "--" in argv else []
    if len(cmd) < 2 or not Path(cmd[0]).name.startswith("python"):
        return f"the command {' '.join(cmd) or '(none)'} is not `python SCRIPT.py`"
    at = next((i for i, a in enumerate(cmd[1:], 1) if a.endswith(".py")), None)
    if at is None or any(a == "-m" or a == "-c" for a in cmd[1:at]):
        return f"the command {' '.join(cmd)} runs no script file"
    script = Path(cmd[at]).resolve()
    if not script.is_file():
        return f"{cmd[at]}: the script is not there (minify runs where the command ran)"
    return Command(cmd[:at], script, cmd[at + 1:])


def check(signature: str | None) -> str:
    """The check every candidate and the repro start with: minify's signature rule, by source, and the hook
    that judges the exception that ends the script."""
    c = embed.closure([("pt2kit.minify.judge.verdicts", "exception_signature")], docstrings=False)
    imports = sorted({"import os", "import sys", *c.imports})
    return "\n".join(imports) + f"\n\nSIGNATURE = {signature!r}\n\n" + c.source().rstrip() + "\n" + JUDGE


def run(cmd: Command, text: str, folder: Path, timeout: float) -> tuple[int | None, str | None, str]:
    """(exit code, or None past ``timeout``; the signature the check said; the module of the exception's
    type) of ``text`` run as the script."""
    path = folder / "candidate.py"
    path.write_text(text)
    cache, kernels = Path(tempfile.mkdtemp(prefix="inductor-cache-", dir=folder)), folder / "kernels"
    kernels.mkdir(exist_ok=True)
    for d in kernels.iterdir():
        (cache / d.name).symlink_to(d)
    try:
        return _judged_run(cmd, path, timeout, {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)})
    finally:
        for d in cache.iterdir():
            if _kernel_folder(d) and not d.is_symlink():
                with contextlib.suppress(OSError):
                    d.rename(kernels / d.name)
        shutil.rmtree(cache, ignore_errors=True)


def _kernel_folder(d: Path) -> bool:
    """A folder of Inductor's code cache (two characters of a source's hash: the generated module, the C++
    source and its .so), named by what it holds, so one run's is right for any other: each run's cache links
    to those of the runs before (a C++ compile is seconds a kernel). Nothing else is shared: the FX graph and
    AOTAutograd caches, Dynamo's profile of dynamic shapes and the rest are keyed on less than what changes a
    result, and start empty in each run."""
    return len(d.name) == 2 and d.name.isalnum() and d.is_dir()


def _judged_run(cmd: Command, path: Path, timeout: float, env: dict[str, str]) -> tuple[int | None, str | None, str]:
    code, stderr = _forked(cmd, path, timeout, env)
    if code == "fresh":
        env = {**env, "PYTHONPATH": os.pathsep.join(
            [str(cmd.script.parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
        try:
            p = subprocess.run([*cmd.python, str(path), *cmd.args], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, None, ""
        code, stderr = p.returncode, p.stderr
    if code is None:
        return None, None, ""
    said = [ln[len(MARK):] for ln in stderr.splitlines() if ln.startswith(MARK)]
    sig = [ln.partition(": ")[2] for ln in said if not ln.startswith("raised by ")]
    by = [ln.removeprefix("raised by ") for ln in said if ln.startswith("raised by ")]
    return code, sig[-1] if sig else None, by[-1] if by else ""


def _forked(cmd: Command, path: Path, timeout: float, env: dict[str, str]) -> tuple[int | str | None, str]:
    """The candidate forked by a run's fork server (:mod:`pt2kit.runtime.worker.forkserver`: a test run's), where
    the command's interpreter is this one with no flags: its exit code (None past ``timeout``) and stderr;
    ("fresh", "") where it cannot be (no server, another interpreter or environment)."""
    import threading

    from pt2kit.runtime.parent.forkclient import spawn

    exe = shutil.which(cmd.python[0]) if len(cmd.python) == 1 else None
    if exe is None or os.path.realpath(exe) != os.path.realpath(sys.executable):
        return "fresh", ""
    child = spawn(None, [str(path), *cmd.args], env, path=[str(cmd.script.parent)], server=_SERVER[0])
    if child is None:
        return "fresh", ""
    child.stdin.close()
    err: list[bytes] = []
    threads = [threading.Thread(target=lambda: child.stdout.read(), daemon=True),
               threading.Thread(target=lambda: err.append(child.stderr.read()), daemon=True)]
    for t in threads:
        t.start()
    try:
        code: int | None = child.wait(timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        code = None
    for t in threads:
        t.join(5)
    return code, b"".join(err).decode("utf-8", "replace")


def _own(cmd: Command, sig: str, off: tuple[int | None, str | None, str]) -> str | None:
    """Why the failure is not the compiler's, from the script's run with torch.compile disabled
    (:data:`.scriptstage.OFF`); None where that run went through (exit 0): compiling is what makes it fail."""
    code, got, _ = off
    words = f"with torch.compile disabled ({setting(OFF)})"
    if code == 0:
        return None
    if code == 1 and got == sig:
        return (f"{cmd.script.name} fails the same way {words}: {sig} is the script's own failure, not the "
                "compiler's; no repro")
    return (f"{cmd.script.name} does not run through {words} either ("
            + (f"it fails with {got}" if got else "timed out" if code is None else f"exit {code}")
            + "): no run without the compiler to tell the compiler's part from the script's; no repro")


_SERVER: list[str | None] = [None]  # the socket of the fork server minify started for this run's candidates


@contextlib.contextmanager
def own_server() -> Iterator[None]:
    """A fork server for the candidates where the run has none (a user's triage): each candidate a fork of one
    process that imported torch once, 0.5 s, not a fresh interpreter's imports (5-25 s a candidate on 2 busy
    cores, which left a 300 s reduction 8 candidates). It serves only this interpreter in this environment
    (:mod:`pt2kit.runtime.worker.forkserver`'s rule); any other command runs fresh, as before. Where the run names a
    server already, that one forks them (:func:`pt2kit.runtime.parent.forkclient.serving` starts none)."""
    from pt2kit.runtime.parent.forkclient import ENV, serving

    with serving() as named:
        _SERVER[0] = named.get(ENV)
        try:
            yield
        finally:
            _SERVER[0] = None


def _statements(text: str) -> set[str]:
    """Each simple statement of ``text`` as the check's ``_statement`` names one (unparsed, one line)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    return {" ".join(ast.unparse(n).split())[:200] for n in ast.walk(tree)
            if isinstance(n, ast.stmt) and not hasattr(n, "body")}


def _failing_statement(sig: str, source: str) -> str | None:
    """The script's statement ``sig`` names (`` at: STATEMENT``, where the exception is not torch's), which
    every candidate failing so must hold: one without it is answered without a run; None where it names none."""
    return max((s for s in _statements(source) if sig.endswith(f" at: {s}")), key=len, default=None)


class _Stop(Exception):
    """The reduction's time is up."""


@dataclass
class Reduced:
    text: str  # the reduced script
    signature: str
    lines_before: int
    lines_after: int
    runs: int  # candidates run
    wall_s: float
    stopped: bool  # the budget ran out: the smallest found so far
    by: str = ""  # the module of the exception's type: torch's own, or another (builtins: an assert)

    @property
    def failure(self) -> str:
        """The `repro` record's kind: a torch error (Dynamo raising as it traced) is a compile error; the
        script's own assertion failing under compile, wrong results; any other error, a crash."""
        if self.by.partition(".")[0] == "torch":
            return "compile-error"
        return "accuracy" if self.signature.startswith("AssertionError:") else "crash"


def reduce(cmd: Command, say: Callable[[str], None], budget_s: float = BUDGET_S) -> Reduced | tuple[int, str]:
    """The script reduced by pysource-minimize while it fails with its own signature; or (exit code, why
    not): 2 where the script's own error ended it (no compiler failure), 3 where the failure did not come
    back."""
    import pysource_minimize

    start = time.monotonic()
    source = cmd.script.read_text()
    with tempfile.TemporaryDirectory(prefix="pt2kit-minify-") as tmp:
        folder = Path(tmp)
        code, sig, by = run(cmd, check(None) + source, folder, timeout=max(120.0, budget_s / 4))
        if code != 125 or sig is None:  # the check said nothing: it ran through, or died before the hook
            return EXIT_CRASH, f"minify's own run of {cmd.script.name} " + (
                "ran through (exit 0): the failure did not come back" if code == 0 else
                f"ended without an exception the check saw (exit {code})")
        head, once = check(sig), time.monotonic() - start
        # a candidate that hangs where the original failed is no repro; the floor: a loaded machine (CI beside
        # the tests) took 30 s to import torch
        timeout = max(120.0, 4 * once)
        own = _own(cmd, sig, run(cmd, switched(OFF, head + source), folder, timeout))
        if own is not None:
            return EXIT_USAGE, own
        runs, best = [0], [source]
        # pysource-minimize asks the same text again (a pass that changed nothing is run once more, and its
        # strategies meet on one text): about half its candidates; each is answered by its first run
        answered: dict[str, bool] = {}
        at = _failing_statement(sig, source)

        def fails(text: str) -> bool:
            if text in answered:
                return answered[text]
            if at is not None and at not in _statements(text):  # the check names the statement it failed at
                answered[text] = False
                return False
            if time.monotonic() - start > budget_s:
                raise _Stop  # pysource-minimize has no budget of its own: the smallest failing one found is it
            runs[0] += 1
            # the failure, and the compiler's: with torch.compile disabled the candidate runs through (a
            # candidate cut to `assert False` fails either way, and is no compiler's failure)
            got = answered[text] = run(cmd, head + text, folder, timeout)[:2] == (1, sig) and \
                run(cmd, switched(OFF, head + text), folder, timeout)[0] == 0
            if got and len(text) < len(best[0]):
                if len(text.splitlines()) < len(best[0].splitlines()):  # said per line gone, not per character
                    say(f"{runs[0]} candidates run: {len(text.splitlines())} lines still fail so")
                best[0] = text
            return got

        say(f"{cmd.script.name}: {sig}; reducing the script ({len(source.splitlines())} lines) with pysource-minimize")
        stopped = False
        try:
            small = pysource_minimize.minimize(source, fails)
        except _Stop:
            small, stopped = best[0], True
        except ValueError:  # its first check of the script (normalised by ast.unparse) did not fail so
            return EXIT_CRASH, f"{cmd.script.name} did not fail with {sig} again, as pysource-minimize reads it back"
    return Reduced(small, sig, len(source.splitlines()), len(small.splitlines()), runs[0],
                   time.monotonic() - start, stopped, by)


def repro_text(r: Reduced, cmd: Command, tool_version: str, torch_version: str,
               stage: dict[str, Any] | None = None, how: str | None = None) -> str:
    """repro.py: a docstring that says what it is (``how``: :func:`.scriptstage.where_it_fails`; the ``stage`` :mod:`.scriptstage`
    told), the check, then the reduced script (its ``from __future__`` imports first, where Python needs them)."""
    tree = ast.parse(r.text)
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    lines = r.text.splitlines()
    first = [ast.get_source_segment(r.text, n) or "" for n in future]
    for n in future:
        for i in range(n.lineno - 1, (n.end_lineno or n.lineno)):
            lines[i] = ""
    name, sig = escape(cmd.script.name, string=True), escape(r.signature, string=True)
    args = escape(" ".join(cmd.args), string=True)
    how = how or scriptstage.where_it_fails(r.failure)
    doc = (f"pt2kit minify {tool_version}: {name}, the user's script reduced at the source level by\n"
           f"pysource-minimize from {r.lines_before} to {r.lines_after} lines. It still fails {how}, with:\n\n    {sig}\n\n"
           f"and runs through with torch.compile disabled (`{setting(OFF)} python repro.py`): the failure is the\n"
           f"compiler's, not the script's.\n\n" + (scriptstage.doc(stage) + "\n" if stage else "") +
           f"Made on torch {escape(torch_version, string=True)}. Run it as `python repro.py{' ' + args if args else ''}` "
           "in the folder the script ran in:\nit exits 1 while the failure is there, 0 once the script runs "
           "through, 125 where it fails otherwise.\n")
    body = "\n".join(lines).strip("\n")
    top = '"""' + doc + '"""\n' + "".join(f + "\n" for f in first)
    return (top + "\n" + check(r.signature) + "\n# ---- the user's script, reduced ----\n" + body + "\n")


def verify(cmd: Command, text: str, signature: str, runs: int = 2) -> int:
    """How many of ``runs`` fresh runs of repro.py failed with the signature (exit 1)."""
    with tempfile.TemporaryDirectory(prefix="pt2kit-minify-") as tmp:
        return sum(run(cmd, text, Path(tmp), timeout=300.0)[:2] == (1, signature) for _ in range(runs))


def minify_script(s: Session, job: Job, where: str, argv: list[str], graphs: int = 0,
                  kept: tuple[str, str, str] | None = None) -> int:
    """The crash ``where`` says (the command's own end, no graph cut shows it), minified as its script reduced:
    repro.py written (-o, and the store) and its `repro` record; the exit code (1: reproduced)."""
    from pt2kit.schema import Repro

    cmd = command_of(argv)
    if isinstance(cmd, str):  # no script to reduce: the line it always said, and why
        raise UsageError(f"{where} (the command failed and no graph was kept or shows it, so there is no graph to cut, and "
                         f"no script to reduce: {cmd})")
    with own_server():  # the repro's verification and stage runs below are fresh processes, as a maintainer's
        r = reduce(cmd, s.say, job.timeout or BUDGET_S)
    if isinstance(r, tuple):
        if r[0] == EXIT_USAGE:
            raise UsageError(f"{where} (the command failed and no graph was kept or shows it, so there is no graph to cut: "
                             f"{r[1]})")
        s.say(f"{where}: {r[1]}: no repro")
        return r[0]
    text = repro_text(r, cmd, __version__, torch_version(), how=(how := scriptstage.where_it_fails(r.failure, graphs, kept)))
    runs = 2
    reproduced = verify(cmd, text, r.signature, runs)
    stage = None
    if reproduced and job.bisect:  # the stage, told by the repro run under PyTorch's own switches
        with tempfile.TemporaryDirectory(prefix="pt2kit-minify-") as tmp:
            stage = scriptstage.stage(lambda t: run(cmd, t, Path(tmp), timeout=300.0)[:2], text, r.signature, s.say)
        text = repro_text(r, cmd, __version__, torch_version(), stage, how)
    if job.output is not None:
        write_output(job.output, text, flag="-o")
    # no graph: 0 nodes before and after (the lines are said below)
    s.emit(Repro, model=None, path=s.store.put_text(text, "text/x-python", ".py"), failure=r.failure,
           nodes_before=0, nodes_after=0, reproduces=reproduced == runs, signature=r.signature, queries=r.runs,
           wall_s=round(r.wall_s, 1), reproduced=reproduced, runs=runs, output=job.output)
    stopped = f" (stopped after {job.timeout or BUDGET_S:g} s: the smallest found)" if r.stopped else ""
    s.say(f"{cmd.script.name}: reduced from {r.lines_before} to {r.lines_after} lines in {r.runs} runs, "
          f"{r.wall_s:.0f} s{stopped}; repro.py fails so in {reproduced} of {runs} fresh runs"
          + (f"; wrote {job.output}" if job.output else ""))
    if stage is not None:
        from pt2kit.schema import Bisect, BisectRun

        runs_of = {k: BisectRun(**stage[k]) for k in ("off", "on") if stage.get(k)}
        s.emit(Bisect, model=None, **{**stage, **runs_of})
    return EXIT_FINDINGS if reproduced else EXIT_CRASH
