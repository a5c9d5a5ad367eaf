"""The records of an in-process capture (``cap.records``) and of each tool run on them, for a notebook or
any Python session: a list of the decoded records, the stream's bytes beside it, and the pipes' next
step as a method (``cap.kdiff()``, ``.minify()``, ``.guardscan()``, ``.reportgen()``), and (0.19)
``.triage(out=DIR)``: pt2kit triage's folder and bug report on them (``triage --from``), shown as Markdown.

Guarantees: a tool runs as the command line would, in a child process (``python -m pt2kit.<tool>``, the
stream on its stdin, the store given with ``--store``): whatever it does, the session that asked goes on;
its exit code is data (``.exit_code``: 1 for a failing verdict), never an exception, and what it says on
stderr is copied to ``sys.stderr`` as it comes (Jupyter shows it in the cell). In Jupyter a records object
shows as reportgen's page (self-contained HTML, in a frame of its own) where pt2kit-reportgen is installed,
else as a table; a repro's code shows as Python (``.repros``). Nothing here imports torch.
"""

from __future__ import annotations

import html
import io
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import msgspec

from pt2kit.schema import Store, decode, read_stream

# the tools a stream may be handed to, by the module `python -m` runs
TOOLS = {"kdiff": "pt2kit.kdiff", "minify": "pt2kit.minify", "guardscan": "pt2kit.guardscan",
         "reportgen": "pt2kit.reportgen", "fxcheck": "pt2kit.fxcheck"}


class Code(str):
    """A repro's code: shown as Python in Jupyter, a plain string everywhere else."""

    def _repr_markdown_(self) -> str:
        fence = "`" * max(3, 1 + max((len(r) for r in self.split("\n") if r.strip("`") == ""), default=0))
        return f"{fence}python\n{self}\n{fence}"


class Records(list):
    """The decoded records of one stream, in order (a kind this version does not know stays a dict), and
    ``stream``, its bytes as a tool wrote them. ``exit_code`` and ``stderr``: the tool's, where one ran."""

    def __init__(self, stream: bytes, store: str | os.PathLike[str], exit_code: int = 0, stderr: str = "") -> None:
        super().__init__(_decoded(stream))
        self.stream = stream
        self.store = Path(store)
        self.exit_code = exit_code
        self.stderr = stderr

    def write(self, path: str | os.PathLike[str]) -> Path:
        """The stream, byte for byte, to ``path`` (NDJSON: ``kdiff < path`` reads it)."""
        Path(path).write_bytes(self.stream)
        return Path(path)

    def of(self, kind: str) -> list[Any]:
        """The records of one kind (``"diff"``, ``"divergence"``, ``"repro"`` ...)."""
        return [r for r in self if _kind(r) == kind]

    @property
    def repros(self) -> list[Code]:
        """The code of each repro.py a ``repro`` record names, read from the store."""
        store = Store(self.store)
        found = [store.locate(r.path) for r in self.of("repro") if not isinstance(r, dict)]
        return [Code(p.read_text()) for p in found if p is not None]

    def run(self, tool: str, *args: str) -> Records:
        """``tool`` (kdiff, minify, guardscan, reportgen, fxcheck) on this stream, as ``tool ARGS < stream``
        would run it with this store: its records (every line before them forwarded, as the pipes do)."""
        if tool not in TOOLS:
            raise ValueError(f"{tool}: expected one of {', '.join(TOOLS)}")
        code, out, err = _child([sys.executable, "-m", TOOLS[tool], "--store", str(self.store), *map(str, args)],
                                self.stream)
        return Records(out, self.store, code, err)

    def kdiff(self, *args: str) -> Records:
        return self.run("kdiff", *args)

    def minify(self, *args: str) -> Records:
        return self.run("minify", *args)

    def guardscan(self, *args: str) -> Records:
        return self.run("guardscan", *args)

    def reportgen(self, *args: str) -> Records:
        return self.run("reportgen", *args)

    def triage(self, *args: str, out: str | os.PathLike[str] | None = None) -> Triage:
        """pt2kit triage's judgement on these records, as ``pt2kit triage --from FILE --out DIR`` runs it
        (FILE: this stream; DIR: ``out``, new or empty, or a fresh ./triage-N): kdiff, minify with its
        bisection, reportgen and bug-report.md into that folder; no command runs. ``args``: triage's
        other flags (``--timeout S``)."""
        given_out = out if out is not None else _flag(args, "--out")
        # the folder this run writes: one that was new or empty before it (triage never writes into another)
        before = set(Path.cwd().glob("triage-*")) if given_out is None else None if _holds(given_out) else set()
        with tempfile.TemporaryDirectory(prefix="pt2kit-triage-") as tmp:
            given = self.write(Path(tmp) / "capture.ndjson")
            code, _, err = _child([sys.executable, "-m", "pt2kit.triage", "--store", str(self.store), "--from",
                                   str(given), *(["--out", str(out)] if out is not None else []), *map(str, args)], b"")
        if given_out is None:  # triage's fresh ./triage-N: the one folder of that name the run made
            made = sorted(set(Path.cwd().glob("triage-*")) - (before or set()))
            folder = made[0] if len(made) == 1 else None
        else:
            folder = Path(given_out) if before is not None and _holds(given_out) else None
        return Triage(folder, code, err, self.store)

    def html(self) -> str:
        """reportgen's page of these records (one self-contained HTML document) where pt2kit-reportgen is
        installed, else a plain table of them."""
        try:
            from pt2kit.reportgen import collect, render
        except ImportError:
            return _table(self)
        lines = read_stream(["-"], stdin=io.BytesIO(self.stream))
        return render(collect(lines), "html", store=self.store, title="pt2kit capture")

    def _repr_html_(self) -> str:
        # in a frame of its own: the page's styles and scripts never reach the notebook's
        return (f'<iframe srcdoc="{html.escape(self.html(), quote=True)}" title="pt2kit records" '
                'style="width: 100%; height: 640px; border: 0"></iframe>')

    def __repr__(self) -> str:
        kinds: dict[str, int] = {}
        for r in self:
            kinds[_kind(r)] = kinds.get(_kind(r), 0) + 1
        return f"<Records: {', '.join(f'{n} {k}' for k, n in kinds.items()) or 'none'}; exit {self.exit_code}>"


class Triage:
    """What ``cap.triage()`` left: ``folder`` (None where triage refused before making one), ``exit_code``
    (triage's: 1 a finding, 2 bad input, 3 a crash), ``stderr``; ``bug_report`` (bug-report.md's text),
    ``repro`` (repro.py's path), ``records`` (the last step's stream). Shown in Jupyter as the bug report."""

    def __init__(self, folder: Path | None, exit_code: int, stderr: str, store: Path) -> None:
        self.folder, self.exit_code, self.stderr, self.store = folder, exit_code, stderr, store

    def _file(self, name: str) -> Path | None:
        path = self.folder / name if self.folder is not None else None
        return path if path is not None and path.is_file() else None

    @property
    def bug_report(self) -> str | None:
        path = self._file("bug-report.md")
        return path.read_text() if path is not None else None

    @property
    def repro(self) -> Path | None:
        return self._file("repro.py")

    @property
    def records(self) -> Records | None:
        """The last stream triage's steps wrote (every record before it forwarded in it)."""
        for name in ("minify.ndjson", "kdiff.ndjson", "guardscan.ndjson", "capture.ndjson"):
            path = self._file(name)
            if path is not None:
                return Records(path.read_bytes(), self.store, self.exit_code)
        return None

    def _repr_markdown_(self) -> str:
        report = self.bug_report
        if report is not None:
            return report
        last = self.stderr.strip().splitlines()[-1:] or [""]
        return f"pt2kit triage: exit {self.exit_code}, no bug report: `{last[0]}`"

    def __repr__(self) -> str:
        return f"<Triage: {self.folder or 'no folder'}; exit {self.exit_code}>"


def _flag(args: tuple[str, ...], name: str) -> str | None:
    """The value ``args`` give ``name`` (``--out DIR`` or ``--out=DIR``), else None."""
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return None


def _holds(folder: str | os.PathLike[str]) -> bool:
    """``folder`` is a folder holding something (a file, a link, a folder)."""
    try:
        with os.scandir(folder) as it:
            return next(it, None) is not None
    except OSError:
        return False


def _kind(r: Any) -> str:
    return r.get("kind", "?") if isinstance(r, dict) else type(r).__struct_config__.tag


def _decoded(stream: bytes) -> list[Any]:
    out: list[Any] = []
    for raw in stream.splitlines():
        if raw.strip():
            try:
                out.append(decode(raw))
            except Exception:  # a kind a newer tool wrote: kept as it is
                out.append(msgspec.json.decode(raw))
    return out


def _table(records: Records) -> str:
    """The records as a plain table (reportgen not installed): kind, model, and what each says."""
    rows = []
    for r in records:
        d = r if isinstance(r, dict) else msgspec.to_builtins(r)
        what = d.get("verdict") or d.get("message") or d.get("op") or d.get("failure") or d.get("file") or ""
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in (_kind(r), d.get("model") or "", what))
                    + "</tr>")
    return "<table><tr><th>kind</th><th>model</th><th>what</th></tr>" + "".join(rows) + "</table>"


def _child(argv: list[str], stdin: bytes) -> tuple[int, bytes, str]:
    """Run ``argv`` with ``stdin`` on its stdin: its exit code, stdout, and stderr (copied to
    ``sys.stderr`` line by line as it comes)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list[bytes] = []

    def feed() -> None:
        try:
            proc.stdin.write(stdin)
        except BrokenPipeError:  # the tool stopped reading (a usage error): its exit code says why
            pass
        finally:
            proc.stdin.close()

    threads = [threading.Thread(target=feed, daemon=True),
               threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)]
    for t in threads:
        t.start()
    err = []
    for line in iter(proc.stderr.readline, b""):
        text = line.decode("utf-8", "replace")
        err.append(text)
        sys.stderr.write(text)
        sys.stderr.flush()
    for t in threads:
        t.join()
    return proc.wait(), b"".join(out), "".join(err)
