"""bug-report.md: the body of a PyTorch issue, in the sections of PyTorch's bug template (``### 🐛 Describe
the bug``: what fails and where in the user's code, the minimal repro inline, the error or verdict, the
bisection and the non-default config; ``### Versions``: collect_env's lines), under a title line, then how
pt2kit triage found it (each step's command, guardscan's breaks).

It always fits a GitHub issue body (:data:`LIMIT`, :func:`fit`): the whole repro.py inline where it fits,
else its graph and inputs inline and the rest named as the file attached from triage's folder.

What fails is reportgen's rule (:func:`pt2kit.reportgen.what_fails`, what the page leads with), so the page
and the report never disagree; this module only writes it as a report. Every string from a record goes
through reportgen's escaping (``md_text``, ``md_code``, ``md_block``: the one every pt2kit Markdown uses),
so nothing a stream holds becomes markdown or HTML: a path holding a newline and ``<!--`` would fold the
rest of the report into a comment, a message holding ``[text](url)`` would put a link in it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pt2kit.reportgen import collect, what_fails
from pt2kit.reportgen import md_block as block
from pt2kit.reportgen import md_code as code
from pt2kit.reportgen import md_text as text
from pt2kit.schema import read_stream

from .steps import Step, rel

CHECK = "\n# ---- the check"  # where minify's repro.py starts embedding its check, below the graph and its data
LIMIT = 65_536  # GitHub's limit on an issue body, in characters
ROWS = 20  # failing graphs listed one by one; the page lists them all
HEAD = 30_000  # characters of the repro's graph and inputs shown where the whole file does not fit
MESSAGE = 4_000  # characters of one crash's message in Error / verdict: a C++ compile error's g++ output runs
# to 100 KB of warnings, and the whole put the report past the limit, leaving the error out
FAILURE = {"accuracy": "wrong results", "compile-error": "compile error", "crash": "crash", "nan": "NaN/Inf",
           "violation": "violation", "missing-error": "no error where eager raises"}
# collect_env's own wording, in its order
VERSIONS = ("PyTorch version", "Is debug build", "CUDA used to build PyTorch", "ROCM used to build PyTorch",
            "OS", "Libc version", "Python version", "Python platform", "Is CUDA available", "CUDA runtime version",
            "GPU models", "cuDNN version", "CPU", "triton", "numpy", "Git version", "interpreter", "error")


def _rel(path: str | None, cwd: Path) -> str | None:
    return rel(Path(path), cwd) if path and path.startswith("/") else path


def build(stream: Path, steps: list[Step], facts: dict[str, str], command: list[str], cwd: Path, exit_code: int,
          notes: list[str] = (), given: tuple[str, str] | None = None) -> str:
    """``given``: where ``--from``'s records lie in the folder and where they came from
    (:func:`.streams.origin`), for a run that ran no command."""
    c = collect(read_stream([stream]))
    rows = what_fails(c, lambda rec, ref: ref)
    main = next((r for r in rows if r["repro"] is not None), rows[0] if rows else None)
    capture = next((st for st in steps if st.name == "capture"), None)

    def report(whole: bool) -> list[list[str]]:
        return [[f"# {_title(main, c, cwd)}", "", "### 🐛 Describe the bug"],
                _what_fails(rows, c, command, capture, cwd, given), _repro(main, c, cwd, whole), _error(main, c),
                _bisection(main, c), _config(main, c), _versions(facts), _rerun(steps, cwd, exit_code, notes), _also(c)]
    return fit(report(True), lambda: report(False))


def fit(parts: list[list[str]], shorter: Any, spare: tuple[int, ...] = (8, 7, 5, 4, 3)) -> str:
    """The report from its sections (a blank line between two), under :data:`LIMIT`: as it is where it fits,
    else ``shorter()``'s (the repro's graph and inputs inline, the rest attached), else that one less the
    sections ``spare`` names, in that order, until it fits, named in a last line (the folder has them all).
    Never left out: the title, what fails, the repro, the versions (what a maintainer asks for first)."""
    whole = _joined(parts)
    if len(whole) < LIMIT:
        return whole
    parts = short = shorter()
    left: list[int] = []
    for i in spare:
        if len(_joined(parts)) < LIMIT - 1000:  # 1000: room for the line that says what was left out
            break
        if not parts[i]:  # a section the report has not (no Also found): leaving it out saves nothing
            continue
        left.append(i)
        parts = [[] if j in left else p for j, p in enumerate(parts)]
    said = [text(short[i][0].lstrip("# ")) for i in left]
    if said:
        parts.append([f"(Left out to fit GitHub's {LIMIT:,}-character limit on an issue body: {', '.join(said)}; "
                      "triage's folder holds them, in report.html and the streams.)"])
    return _joined(parts)


def _joined(parts: list[list[str]]) -> str:
    return "\n".join(line for part in parts if part for line in [*part, ""]).rstrip() + "\n"


def _model(c: Any, name: str | None) -> Any:
    return next((m for m in c.of("model") if m.model == name), None)


def _backend(c: Any, row: dict[str, Any] | None) -> str:
    m = _model(c, row["model"]) if row else None
    cap = m.captured if m is not None else None
    rep = row["repro"]["r"] if row and row["repro"] else None
    return (rep.backend if rep else None) or (cap.backend_code or cap.backend if cap else None) or "torch.compile"


def _no_graph(c: Any) -> str:
    """Why a repro is the script, where no model is named: no graph was kept, the graphs kept did not run alone
    (capture's ``unrunnable``: a custom op the script registers), or none of them shows the failure."""
    models = c.of("model")
    cannot = [m for m in models if m.captured is not None and m.captured.unrunnable]
    if not models:
        return "no graph was kept"
    if len(cannot) == len(models):
        return "its captured graph does not run alone" if len(models) == 1 else "its captured graphs do not run alone"
    return "no captured graph that runs alone shows it" if cannot else "no captured graph shows it"


def _title(row: dict[str, Any] | None, c: Any, cwd: Path) -> str:
    if row is None:  # breaks and recompiles are findings too (triage's exit 1): the title says them, not "none"
        found, stopped = _guardscan_found(c, cwd), list(dict.fromkeys(tool for tool, _ in _stopped(c)))
        # a graph no tool judged is no pass: the title says who stopped, as What fails does
        return ("pt2kit triage: no failure found" + (f"; {text(found)}" if found else "")
                + (f", but not every graph was judged ({text(', '.join(stopped))} stopped)" if stopped else ""))
    rep = row["repro"]["r"] if row["repro"] else None
    kind = FAILURE.get(rep.failure, rep.failure) if rep else (row["what"][0] if row["what"] else "failure")
    op = row["op"] or (rep.ops[0] if rep and len(rep.ops) == 1 else None)
    where = _rel(row["mine"], cwd)  # reportgen's rule: the user's own line, as the page leads with it
    at = "at" if row["mine_is_op"] else "called at"  # the call of the compiled code is not the op's line
    # a crash naming no graph (the process's end) has no model record: reportgen's row names the process
    graph = f" ({text(row['model'])})" if _model(c, row["model"]) is not None else f" ({_no_graph(c)})"
    return (f"[{text(_backend(c, row))}] {text(kind)}" + (f" in {text(op)}" if op else "")
            + (f" {at} {text(where)}" if where else "") + graph)


def _what_fails(rows: list[dict[str, Any]], c: Any, command: list[str], capture: Step | None,
                cwd: Path, given: tuple[str, str] | None = None) -> list[str]:
    out = ["#### What fails", "", _ran(command, capture, given)]
    if not rows:
        stopped = _stopped(c)
        if stopped:  # a graph no tool judged is no pass
            return [*out, "", "No tool found a failure, but not every graph was judged:", "",
                    *(f"- {text(tool)} stopped: {code(e.message)}" for tool, e in stopped)]
        found = _guardscan_found(c, cwd)
        return [*out, "", "No tool found a failure: every compiled graph kdiff judged passed, and nothing crashed"
                + (f"; guardscan found {text(found)} (under Also found, below)." if found else ".")]
    for r in rows[:ROWS]:
        out += ["", f"- {code(r['model'])}: " + "; ".join(map(text, r["what"] or ["fails"]))]
        if r["op"]:
            out.append(f"  - the op: {code(r['op'])}")
        mine = r["mine"]
        if mine:
            out.append(f"  - in your code: {code(_rel(mine, cwd))}"
                       + (f": {code(r['code'])}" if r["code"] and r["mine_is_op"] else "")
                       + ("" if r["mine_is_op"] else " (the call of the compiled code; the op's own line is "
                          "not known)"))
        if r["where"] and r["where"] != mine:
            out.append(f"  - in the captured graph: {code(_rel(r['where'], cwd))}" + (f": {code(r['code'])}" if r["code"] else ""))
        if r["stage"]:
            out.append(f"  - the stage: {text(r['stage'])}")
        out += _compiled_code(_model(c, r["model"]), mine, cwd)
    if len(rows) > ROWS:
        out += ["", f"- and {len(rows) - ROWS} more (report.html in triage's folder lists every one)"]
    return out


def _compiled_code(m: Any, mine: str | None, cwd: Path) -> list[str]:
    """The function compiled and the user's line that called it, each where the row's line is not it: a model
    wrapped by a library (a Hugging Face ``forward``) is compiled at the library's line, the op is in the
    library's code, and the call in the user's script is the one line of theirs the report can name."""
    cap = m.captured if m is not None else None
    if cap is None:
        return []
    said = [f"{code(cap.function or '?')} at {code(_rel(cap.source, cwd))}"] if cap.source and cap.source != mine else []
    if cap.called_from and cap.called_from not in (mine, cap.source):
        said.append(f"called from {code(_rel(cap.called_from, cwd))}")
    return [f"  - the compiled code: {', '.join(said)}"] if said else []


def _ran(command: list[str], capture: Step | None, given: tuple[str, str] | None) -> str:
    """What ran under torch.compile: the command triage ran, or (``--from``) the records given, and that
    there is no command to run again: the repro below stands alone."""
    if given is None:
        return (f"Running {code(' '.join(command))} under `torch.compile`"
                + (f" (the script exited {capture.code})." if capture and capture.code else " (the script itself exited 0)."))
    file, where = given
    if where == "in process":
        return (f"A block of code captured in process under `torch.compile` (`with pt2kit.capture()`: a notebook's "
                f"cells or a Python session; its records: {code(file)}). There is no script to run again: the repro "
                "below, where minify made one, reproduces it alone.")
    return (f"Running {code(where)} under `torch.compile`, as `pt2kit capture` recorded it before triage ran (its "
            f"records: {code(file)}; triage ran no command).")


def _repro_text(rep: Any, c: Any) -> str | None:
    for path in (rep.output, os.path.join(c.store_for(rep) or "", rep.path.path)):
        if path and os.path.isfile(path):
            return Path(path).read_text(errors="replace")
    return None


def _stopped(c: Any) -> list[tuple[str, Any]]:
    """(tool, `error` record) of every tool that stopped on a graph or on the stream, in stream order."""
    tools = {h.run: h.tool for h in c.of("header")}
    return [(tools.get(e.run, "?"), e) for e in c.of("error")]


def _minify_stopped(c: Any, model: str | None) -> str | None:
    """What minify's `error` record said where it stopped on ``model`` (or on the stream as a whole)."""
    return next((e.message for tool, e in _stopped(c) if tool == "minify" and e.model in (model, None)), None)


def _repro(row: dict[str, Any] | None, c: Any, cwd: Path, whole: bool = True) -> list[str]:
    """The repro inline: the whole file (``whole``), else its graph and inputs (what is above minify's
    check, at most :data:`HEAD` characters), the rest named as the file to attach from triage's folder."""
    out = ["#### Minimal repro", ""]
    if row is None or row["repro"] is None:
        said = _minify_stopped(c, row["model"] if row else None)
        if said:
            return [*out, f"No repro: minify stopped: {code(said)}"]
        return [*out, "No repro: minify made none (nothing failed, or the failure could not be re-created)."]
    rep = row["repro"]["r"]
    where = _rel(rep.output, cwd) if rep.output else rep.path.path
    file, _, name = (rep.backend or "").rpartition(":")  # a backend of the user's file: the repro loads it
    needs = f"torch and {code(_rel(file, cwd))} (its backend {code(name)}, loaded from there)" if file else "torch alone"
    # a repro of no graph (minify 0.13: a failure before any graph was kept) is the script reduced
    cut = (f"cut from {rep.nodes_before} to {rep.nodes_after} nodes: {', '.join(code(o) for o in rep.ops) or 'no op'}"
           + (f", {text(rep.phase)} graph" if rep.phase else "")) if rep.nodes_before else \
        f"your script reduced at the source level ({_no_graph(c)})"
    out.append(f"{code('python ' + where)} needs {needs} and exits 1 while the bug is there (it failed the same way "
               f"in {rep.reproduced} of {rep.runs} fresh runs), 0 once it is fixed; {cut}.")
    source = _repro_text(rep, c)
    if source is None:
        return [*out, "", "(the repro file is missing from the store)"]
    if whole:
        return [*out, "", block(source, "python")]
    head = source.split(CHECK, 1)[0].rstrip()
    lines = len(source.splitlines())
    if len(head) > HEAD:  # a graph of thousands of ops: its start, the file has it all
        head = head[:HEAD].rsplit("\n", 1)[0] + "\n# ... (the rest is in the file attached)"
    return [*out, "", f"Its {lines} lines do not fit an issue body: its graph and inputs are below; the whole file "
                      f"is attached ({code(where)}).", "", block(head, "python")]


def _bisection(row: dict[str, Any] | None, c: Any) -> list[str]:
    out = ["#### Bisection", ""]
    model = row["model"] if row else None
    rep = row["repro"]["r"] if row and row["repro"] else None
    # a script-level repro (no graph kept) names no model: its bisection names none either
    key = rep.model if rep is not None else model
    found = [b for b in c.of("bisect") if b.model == key] or (c.of("bisect") if model is None else [])
    if not found:
        return [*out, "Not bisected: the stream holds no `bisect` record (minify bisects the repro it made; "
                      "it made none, or this minify does not bisect)."]
    for b in found:
        out.append(f"- {text(b.verdict) or ('found' if b.found else 'no stage told')}")
        if b.chain:
            out.append("  - backends: " + ", ".join(f"{code(k)} {'fails' if v else 'passes'}" for k, v in b.chain.items()))
        if b.subsystem:
            app = f", application {b.application}" + (f" of {b.applications}" if b.applications is not None else "") \
                if b.application is not None else ""
            out.append(f"  - subsystem: {code(b.subsystem)}{app}" + (f": {code(b.what)}" if b.what else ""))
        if b.config:
            out.append(f"  - the config change that makes it pass: {code(b.config)}")
        if b.env:
            out.append("  - PyTorch's own switches: " + code(" ".join(f"{k}={v}" for k, v in b.env.items())))
        for name, run in (("off", b.off), ("on", b.on)):
            if run is not None:
                out.append(f"  - checked, culprit {name}: {code(run.setting)} "
                           f"{'fails' if run.fails else 'passes'}"
                           # a passing run's signature is only "passes" again: the failure's kind is what tells
                           + (f" ({text(run.signature)})" if run.signature and run.fails else ""))
    return out


def _error(row: dict[str, Any] | None, c: Any) -> list[str]:
    out = ["#### Error / verdict", ""]
    if row is None:
        return [*out, "None."]
    bad = [d for d in c.of("diff") if d.model == row["model"] and not d.passed]
    if bad:
        out += ["| output | max abs error | mismatched | reference | compiled | rule |", "|---|---|---|---|---|---|"]
        for d in bad[:12]:
            m = d.metrics
            out.append(f"| {code(d.output, table=True)} | {m.max_abs if m else ''} "
                       f"| {f'{m.mismatches} of {m.numel}' if m else ''} | {code(d.ref, table=True)} "
                       f"| {code(d.test, table=True)} | {text(d.rule) if d.rule else '-'} |")
    for x in row["crashes"]:  # reportgen's rule: the graph's crash and the end of the process it killed
        out += ["", f"{text(x.stage)}: {code(x.exception or x.signal or 'crash')}"
                + (f" {code(_message(x.message))}" if x.message else "")]
        if x.stderr_tail:
            out += ["", block("\n".join(x.stderr_tail.splitlines()[-20:]))]
    rep = row["repro"]["r"] if row["repro"] else None
    if rep is not None and rep.signature:
        out += ["", f"What the repro checks: {code(rep.signature)}"]
    return out


def _message(message: str) -> str:
    """A crash's message as Error / verdict shows it: whole where it is short, else its first line and the
    lines that say error (a compiler's, among its warnings), up to :data:`MESSAGE` characters, and where the
    whole one is (the streams in triage's folder)."""
    if len(message) <= MESSAGE:
        return message
    lines = message.splitlines()
    said = "\n".join([lines[0], *(ln for ln in lines[1:] if "error" in ln.lower())])[:MESSAGE]
    return f"{said}\n... ({len(message):,} characters in all: the streams in triage's folder hold the whole message)"


def _versions(facts: dict[str, str]) -> list[str]:
    lines = [f"{k}: {facts[k]}" for k in VERSIONS if k in facts]
    lines += [f"{k}: {v}" for k, v in facts.items() if k not in VERSIONS]
    return ["### Versions", "", "Read in the script's interpreter (collect_env's names):", "", block("\n".join(lines))]


def _config(row: dict[str, Any] | None, c: Any) -> list[str]:
    out = ["#### Non-default config", ""]
    m = _model(c, row["model"]) if row else next(iter(c.of("model")), None)
    cap = m.captured if m is not None else None
    lines = []
    if cap is not None:
        how = ", ".join(x for x in (f"backend={cap.backend_code or cap.backend}" if cap.backend else None,
                                    f"mode={cap.mode}" if cap.mode else None, "dynamic" if cap.dynamic else None) if x)
        lines += [f"torch.compile({how})", *(f"options[{k!r}] = {v}" for k, v in cap.options.items())]
    if m is not None:
        lines += [f"{k} = {v}" for k, v in {**m.settings, **m.config}.items()]
    rep = row["repro"]["r"] if row and row["repro"] else None
    if rep is not None and rep.config:
        lines += ["", "# what the failure needs (the repro's CONFIG):", *(f"{k} = {v}" for k, v in rep.config.items())]
    return [*out, block("\n".join(lines)) if lines else "None: every dynamo and inductor setting at its default."]


def _rerun(steps: list[Step], cwd: Path, exit_code: int, notes: list[str]) -> list[str]:
    lines = [f"{st.shown(cwd)}   # exit {st.code}" for st in steps]
    out = ["### How to rerun each step", "", "Each step is the tool itself, reading the stream the step before wrote "
           f"(pt2kit triage exited {exit_code}):", "", block("\n".join(lines), "sh")]
    # as triage said them on stderr, in a block: they name models and backends a stream holds
    return [*out, *(["", "What triage decided between the steps:", "", block("\n".join(notes))] if notes else [])]


def _breaks_and_recompiles(c: Any) -> tuple[list[Any], list[Any]]:
    """guardscan's findings: each distinct graph break once (a break met by several compiles is one), and the
    recompiles automatic dynamic shapes did not expect."""
    breaks = list({(b.source, b.reason): b for b in c.of("graph_break")}.values())
    return breaks, [r for r in c.of("recompile") if not r.expected]


def _guardscan_found(c: Any, cwd: Path) -> str | None:
    """What guardscan found, for a report whose every graph passed: ``2 graph breaks (at train.py:12, ...)``."""
    breaks, recompiles = _breaks_and_recompiles(c)
    said = []
    if breaks:
        lines = list(dict.fromkeys(str(_rel(b.source, cwd)) for b in breaks if b.source))
        at = ", ".join(lines[:3]) + (", ..." if len(lines) > 3 else "")  # a title stays one short line
        said.append(f"{len(breaks)} graph break{'s' * (len(breaks) > 1)}" + (f" (at {at})" if at else ""))
    if recompiles:
        said.append(f"{len(recompiles)} recompile{'s' * (len(recompiles) > 1)}")
    return " and ".join(said) or None


def _also(c: Any) -> list[str]:
    breaks, recompiles = _breaks_and_recompiles(c)
    if not breaks and not recompiles:
        return []
    out = ["### Also found (guardscan)", ""]
    for b in breaks[:5]:
        out.append(f"- graph break at {code(b.source or '?')}: {code(b.reason)}")
    for r in recompiles[:5]:
        out.append(f"- recompile: {code(r.guard or r.reason or '?')}")
    return out
