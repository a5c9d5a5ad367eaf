"""triage's parent: the pipeline a user could type, one step at a time, into one folder.

Guarantees:

* Each step is the tool itself, a child process reading the stream file the step before wrote and writing
  its own (``capture.ndjson``, ``guardscan.ndjson``, ...; a tool forwards what it reads, so each stream holds
  every record before it), its exact command line said on stderr before it runs and written into
  ``bug-report.md``.
* The script is the user's: ``pt2kit capture --out`` keeps its stdout on stdout, its stderr on stderr, and
  its exit code is said (``the command failed (exit 1)``) and written into the report.
* Which steps run is decided from what the streams hold: capture always; guardscan on capture's stream;
  kdiff where graphs were captured and none crashed (a crash record minifies as it is); minify where a
  record fails (a failing diff, a crash of a graph, a NaN/Inf kernel, a violation); reportgen over the last
  stream; then ``bug-report.md`` (:mod:`.bugreport`). A backend that is code (``FILE.py:NAME``, which a
  stream never makes a tool import) is handed to kdiff and minify with ``--backend FILE.py:NAME``, and an
  Inductor hook the script set to code (``captured.code_settings``) with ``--config KEY=FILE.py:NAME``, each
  said in one line and written in their command lines: the user named the script on triage's command line.
  Not a backend whose file runs more than definitions at import (a script without a ``__main__`` guard): each
  tool loading it would run the script again; one line says how to hand it over, neither runs, exit 2.
* kdiff's and minify's workers are forks of one process that imports torch, Dynamo and Inductor while the script
  runs (:func:`pt2kit.runtime.parent.forkclient.serving`; where the environment names a fork server already, that one),
  not each a fresh import after the step before; the steps' command lines, output and exit codes are the same.
  The server is stopped when triage ends.
* The folder is new or empty (never one holding files, a link that dangles or loops, or where stdout or
  stderr goes); on Ctrl-C or SIGTERM the step running ends as that tool ends on it, no further step runs, and
  what was written stays (stderr says where); exit 130/143.
* Every file triage writes into it is new: before each step (and right after the script ran) the names it
  will write are checked free, its streams are made with O_EXCL and bug-report.md is linked into place (never
  over a name made since), and each tool checks its own -o when it writes (runtime.writes). A file the
  script made under one of those names, or a folder the script removed or swapped, stops the run in one line,
  exit 2, with what was written kept.
* Exit: the most severe step's: 3 a crash (a tool's, the compiler's that no repro reproduces, or the script's
  own that no tool reproduced), then 1 a finding or a repro that reproduces (a compiler crash kdiff hit
  included), then 2 a step that refused its input (a bug found stays the answer where a later step
  refused), then 0 nothing found.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import sys
from pathlib import Path

from pt2kit.runtime.common.backends import DECOMPOSITION
from pt2kit.runtime.common.errors import Terminated, UsageError
from pt2kit.runtime.parent.forkclient import serving
from pt2kit.runtime.parent.session import Session
from pt2kit.runtime.parent.writes import Outputs

from . import bugreport, environment, streams
from .job import Job, fresh_folder, make_folder
from .narrate import Narrator
from .steps import MODULES, Step, command, rel
from .steps import run as run_step


def run(s: Session, job: Job) -> int:
    tools = {name: command(name) for name in MODULES}
    records = _given(job.stream) if job.stream is not None else None
    if records is None and shutil.which(job.command[0]) is None:
        raise UsageError(f"{job.command[0]}: no such command")
    origin = streams.origin(Path(job.stream), job.stream) if job.stream is not None else None
    cwd = Path.cwd()
    out = fresh_folder(job.out, cwd)
    made = make_folder(out, job.out)
    pipeline = Pipeline(s, job, tools, cwd, Path(os.path.realpath(out)), made)
    pipeline.given = (records, origin) if records is not None else None
    try:
        # kdiff's and minify's workers fork from one process that imports torch while the script runs, not
        # each its own after the step before (on 2 cores 3-6 s each): the speed a shell pipe gets by running
        # its tools side by side
        with serving() as pipeline.served:
            return pipeline.run()
    except KeyboardInterrupt:  # Ctrl-C between two steps (one during a step was said already)
        if pipeline.steps and pipeline.steps[-1].stop is None:
            pipeline.say.interrupted(pipeline.steps, between=True)
        raise


class Pipeline:
    """One triage run: its folder, the steps run so far, and what they share (the store, the flags)."""

    def __init__(self, s: Session, job: Job, tools: dict[str, tuple[list[str], list[str]]], cwd: Path,
                 out: Path, made: os.stat_result) -> None:
        self.job, self.tools, self.cwd, self.out = job, tools, cwd, out
        self.folder = (made.st_dev, made.st_ino)  # the folder triage made or checked: a swapped one is not it
        self.writes = Outputs()
        self.say = Narrator(s.say, cwd, out)
        self.steps: list[Step] = []
        self.given: tuple[bytes, str] | None = None  # --from: the records' bytes, and where they came from
        self.served: dict[str, str] = {}  # the environment naming the fork server kdiff's and minify's workers use
        # each step runs here with the paths it is shown with (relative where they lie under here), so the
        # command said, the one in bug-report.md and the argv its header records are one
        store = rel(Path(job.store).resolve() if job.store else out / "store", cwd)
        self.common = ["--store", store, *(["--quiet"] if s.quiet else []), *(["--debug"] if s.debug else [])]
        self.timeout = ["--timeout", f"{job.timeout:g}"] if job.timeout else []

    def rel(self, path: Path) -> str:
        return rel(path, self.cwd)

    def go(self, step: Step) -> Step:
        """Run one step as said; a Ctrl-C or SIGTERM during it ends the run, what was written kept."""
        shown, runs = self.tools[step.name if step.name != "capture" else "pt2kit capture"]
        step.argv, step.run_as = [*shown, *self.common, *step.argv], [*runs, *self.common, *step.argv]
        self.free([p.name for p in (step.stdout, *step.files) if p is not None])
        self.say.start(step, len(self.steps) + 1)
        self.steps.append(run_step(step, self.writes))
        self.say.end(step)
        if step.stop is not None:
            self.say.interrupted(self.steps)
            raise KeyboardInterrupt() if step.stop == signal.SIGINT else Terminated()
        self.here()
        return step

    def run(self) -> int:
        """The steps, each chosen by what the streams before it hold; the run's exit code."""
        job, out, say, timeout = self.job, self.out, self.say, self.timeout
        last = out / "capture.ndjson"
        if self.given is not None:  # --from: capture's records, copied in; no command runs
            probe = environment.start([sys.executable])
            self.writes.write("", self.rel(last), self.given[0])
            # a block's records are handed over in a file of the moment (cap.triage()): the folder's copy is named
            say.line(f"capture: skipped: records captured in process (with pt2kit.capture()), given with --from and "
                     f"copied to {self.rel(last)}; triage runs no command" if self.given[1] == "in process" else
                     f"capture: skipped: the records of {job.stream} (--from, copied to {self.rel(last)}), captured "
                     f"before for {self.given[1]}; triage runs no command")
            capture = None
        else:
            probe = environment.start(job.command)
            capture = self.go(Step("capture", [*timeout, "--out", self.rel(last), "--", *job.command], files=[last]))
            if not last.is_file():  # capture refused the command before it ran: its line said why
                return capture.code or 2
        # what the script made in the folder under a name triage writes stops the run now, not minutes later
        self.free([*WRITES, *(p.name for p in out.glob("repro-*.py"))])
        seen = streams.read(last)
        if not seen.models and capture is not None and capture.code:
            # whose failure it is, its stderr says: the script's own, or Dynamo's raising while it traced
            # (fullgraph=True over a graph break) before any backend got a graph; minify reduces the script
            say.line(f"the script failed (exit {capture.code}) before torch.compile handed a backend any graph (its "
                     "stderr above says why); no tool has a graph to judge"
                     + (", minify reduces the script itself" if "crash of the script" in seen.failing else ""))
        if seen.models or seen.traces:
            self.go(Step("guardscan", [], last, out / "guardscan.ndjson"))
            last = out / "guardscan.ndjson"
        backend = _handover(seen, say)
        if self.given is not None and seen.models and set(seen.models) <= seen.judged:
            say.line("kdiff: skipped: the records given (--from) hold kdiff's verdict on every graph already (kdiff "
                     "ran on them before); minify takes its failures")
        elif seen.models and not seen.crashes and backend is not None:
            self.go(Step("kdiff", [*timeout, *backend], last, out / "kdiff.ndjson", env=self.served))
            last = out / "kdiff.ndjson"
        elif seen.crashes:
            say.line(f"kdiff: skipped: {seen.crashes[0]} crashed in the compiler (its crash record minifies as it is)")
        failing = streams.read(last).failing
        if failing and backend is not None:
            self.go(Step("minify", [*timeout, *backend, "-o", self.rel(out / "repro.py")], last, out / "minify.ndjson",
                         files=[out / "repro.py"], env=self.served))
            last = out / "minify.ndjson"
        elif not failing:
            say.line("minify: skipped: no record fails (nothing to minify)")
        self.go(Step("reportgen", ["-o", self.rel(out / "report.html"), self.rel(last)], None,
                     out / "reportgen.ndjson", files=[out / "report.html"]))
        facts = environment.finish(*probe)
        # a backend that cannot be loaded without running the script again left kdiff and minify unrun: incomplete
        code = worst(self.steps, bool(seen.models), refused=backend is None and _unloadable(seen) is not None,
                     explained=streams.read(last).explained())
        report = bugreport.build(last, self.steps, facts, job.command, self.cwd, code, say.notes,
                                 given=None if self.given is None else (self.rel(out / "capture.ndjson"), self.given[1]))
        self.free(["bug-report.md"])
        self.writes.write("", self.rel(out / "bug-report.md"), report)
        return say.finish(self.steps, code)

    def here(self) -> None:
        """The folder is still the one triage made or checked, after the step just run (capture ran the
        script; kdiff and minify may run its backend): one line, exit 2, where it was removed or swapped."""
        try:
            st = os.stat(self.out)
            gone = (st.st_dev, st.st_ino) != self.folder
        except OSError:
            gone = True
        if gone:
            step = self.steps[-1].name
            who = "the script" if step == "capture" else f"the code {step} ran"
            raise UsageError(f"{who} removed triage's folder {self.rel(self.out)} while it ran")

    def free(self, names: list[str]) -> None:
        """Each name triage is about to write into its folder is free: a file there now was made by the
        script (or code a step ran), and triage writes over no file it did not write."""
        for name in names:
            path = self.out / name
            if os.path.lexists(path):
                step = self.steps[-1].name if self.steps else None
                who = "the script" if step in (None, "capture") else f"the code {step} ran"
                raise UsageError(f"{self.rel(path)}: {who} made it in triage's folder while it ran, and triage "
                                 f"writes over no file it did not write: it stops here, what was written stays in "
                                 f"{self.rel(self.out)} (give triage a folder of its own: another --out)")


def _given(path: str) -> bytes:
    """--from's records, read whole now (before the folder is made): one line, exit 2, where they cannot be."""
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise UsageError(f"--from {path}: is no file (give the file pt2kit capture wrote)")
            return f.read()
    except FileNotFoundError:
        raise UsageError(f"--from {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"--from {path}: is a folder, not a file (give the file pt2kit capture wrote)") from None
    except OSError as e:
        raise UsageError(f"--from {path}: {e.strerror or e}") from None


def _handover(seen: streams.Seen, say: Narrator) -> list[str] | None:
    """kdiff's and minify's flags that hand over the code the script compiled with: its backend
    (:func:`_backend`), then each Inductor hook it set to code (:func:`_code_settings`); None: run neither."""
    backend = _backend(seen, say)
    return None if backend is None else backend + _code_settings(seen, say, bool(backend))


def _code_settings(seen: streams.Seen, say: Narrator, backend: bool) -> list[str]:
    """``--config KEY=FILE.py:NAME`` for each Inductor hook the script set to code (``captured.code_settings``:
    ``post_grad_custom_post_pass``...), which a stream never makes a tool import, said in one line: you named
    the script. Not handed over, each said, and left to kdiff's and minify's own line saying which flag: a
    decomposition the script put into Inductor's table (only a backend that installs it hands it over), code
    no module-level name reaches, a hook set to different code in different graphs."""
    flags, handed = [], []
    for key, wheres in sorted(seen.code_settings.items()):
        where = sorted(wheres)[0]
        file, _, qual = where.rpartition(":")
        if key.startswith(DECOMPOSITION):
            if not backend:
                say.line(f"the script put its own decomposition of {key.removeprefix(DECOMPOSITION)} into Inductor's "
                         f"table ({where}): triage cannot hand that over (only a backend that installs it can, "
                         "--backend FILE.py:NAME); kdiff and minify say so")
            continue
        short = key.removeprefix("inductor.")
        if len(wheres) > 1 or not file.endswith(".py") or not qual.isidentifier():
            why = f"different code in different graphs ({', '.join(sorted(wheres))})" if len(wheres) > 1 else \
                f"code no module-level name of a file reaches ({where})"
            say.line(f"the script set {key} to {why}: triage cannot hand it over; kdiff and minify say what to give")
            continue
        flags += ["--config", f"{short}={where}"]
        handed.append(f"--config {short}={where}")
    if handed:
        say.line(f"the script set Inductor's {', '.join(h.split()[1].split('=')[0] for h in handed)} to its own code: "
                 f"triage hands it to kdiff and minify as {', '.join(handed)} (a stream alone never makes a tool "
                 "import code; you named the script)")
    return flags


def _backend(seen: streams.Seen, say: Narrator) -> list[str] | None:
    """kdiff's and minify's ``--backend`` for a script that compiled with its own code: ``[]`` for a backend
    torch registers (the stream names it), None where its graphs used several of code (one per run) or its
    file runs more than definitions at import (:func:`_unloadable`: handing it over would run the script
    again in each tool)."""
    codes = sorted(seen.backend_code)
    if not codes:
        return []
    if len(codes) > 1:
        say.line(f"kdiff, minify: skipped: the script's graphs compiled with {len(codes)} backends of its own code "
                 f"({', '.join(codes)}); run each graph's with its --backend by hand")
        return None
    refused = _unloadable(seen)
    if refused is not None:
        say.line(f"kdiff, minify: skipped: {refused}")
        return None
    say.line(f"the script compiled with its own backend {codes[0]}: triage hands it to kdiff and minify as "
             f"--backend {codes[0]} (a stream alone never makes a tool import code; you named the script)")
    return ["--backend", codes[0]]


def _unloadable(seen: streams.Seen) -> str | None:
    """The line saying why the script's one backend of code cannot be handed over: its file runs more than
    definitions at import (pt2kit.runtime.common.toplevel, the rule kdiff's and minify's loader keeps), so each
    tool loading it would run the script again; None where it can be (or is not one file's name)."""
    from pt2kit.runtime.common.toplevel import unguarded

    file, _, name = next(iter(seen.backend_code)).rpartition(":") if len(seen.backend_code) == 1 else ("", "", "")
    return unguarded(Path(file), name) if file.endswith(".py") and name.isidentifier() else None


# every name triage writes into its folder after capture's stream (minify's repro-N.py for several failures)
WRITES = ("guardscan.ndjson", "kdiff.ndjson", "minify.ndjson", "repro.py", "reportgen.ndjson", "report.html",
          "bug-report.md")

# each tool's exit code by how much a user must know of it, least first: clean, a step that refused its
# input (the run is incomplete: its line says why), a finding (a bug found stays found whatever a later step
# refused), a crash (a tool or the compiler died: the worst news, unless minify's repro reproduces it: a finding)
SEVERITY = (0, 2, 1, 3)


def worst(steps: list[Step], compiled: bool, refused: bool = False, explained: set[str] | frozenset[str] = frozenset()
          ) -> int:
    """The run's exit code: the most severe step's (:data:`SEVERITY`: 3, then 1, then 2, then 0). The
    script's own failing exit counts where no tool found a failure to explain it: 2 (the model's own
    failure) where it failed before any graph was compiled, else 3 (it died with graphs compiled, and no
    tool re-created how). ``refused``: triage itself left a step unrun that the streams called for (its
    line said why), which counts as that step's refusal: 2. ``explained``: the steps whose exit 3 is the
    compiler's crash of graphs that minify's repro reproduces (:meth:`.streams.Seen.explained`): the bug
    found, 1, as the same crash caught by capture is."""
    codes = [1 if st.code == 3 and st.name in explained else min(st.code, 3) if st.code is not None and st.code >= 0
             else 3 for st in steps if st.name != "capture"]
    codes += [2] if refused else []
    code = max(codes, key=SEVERITY.index, default=0)
    capture = next((st for st in steps if st.name == "capture"), None)
    if capture is not None and capture.code not in (0, None) and code == 0:
        return 3 if compiled else 2
    return code
