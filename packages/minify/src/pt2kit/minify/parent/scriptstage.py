"""Which stage of the compiler a script-level repro (:mod:`.script`: a failure no captured graph shows)
fails in, told by running the repro itself under PyTorch's own switches, parent side and torch-free:

* off: torch.compile disabled (``TORCHDYNAMO_DISABLE=1``, which ``torch._dynamo.optimize`` reads at each
  call): the repro must run through, or nothing compiled is to blame;
* the backends of torch's chain in order (``TORCH_BISECT_BACKEND=B``, which ``torch.compile`` reads at each
  call and which overrides the script's own backend: :mod:`torch._inductor.compiler_bisector`'s switch):
  eager (Dynamo alone), aot_eager, aot_eager_decomp_partition, inductor. The first that fails as the repro
  does is the stage; the one before it (or off) passing is the check;
* a probe: ``TORCH_BISECT_BACKEND`` set to a backend no registry holds, which ``torch.compile`` refuses at
  once. A repro that still fails as before under it compiles through a door the switch does not reach
  (``torch._dynamo.optimize``), and no stage is told: every backend would "fail".

Each switch is the first line of the text run (``os.environ`` set before the script's own code), so a run
forks from a warm fork server like any candidate; the docstring gives the same runs as command lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .bisect import CHAIN, WHAT

OFF = {"TORCHDYNAMO_DISABLE": "1"}
PROBE = "pt2kit_no_such_backend"  # a name no backend registry holds: torch.compile raises InvalidBackend


def switched(env: dict[str, str], text: str) -> str:
    """``text`` run with ``env`` set before any of its code: after its docstring and ``from __future__``
    lines, which Python needs first."""
    import ast

    lines, at = text.splitlines(keepends=True), 0
    for node in ast.parse(text).body:
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        doc = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and not at
        if not (future or doc):
            break
        at = node.end_lineno or node.lineno
    head = f"import os as _os\n_os.environ.update({env!r})\n"
    return "".join(lines[:at]) + head + "".join(lines[at:])


def setting(env: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in env.items())


def stage(run: Callable[[str], tuple[int | None, str | None]], text: str, signature: str,
          say: Callable[[str], None]) -> dict[str, Any]:
    """The `bisect` record's fields for the repro ``text`` (``run(text)``: its exit code and the signature
    its check said): the stage, the chain, and the two runs that check it."""
    start, steps = time.monotonic(), [0]

    def ask(env: dict[str, str]) -> dict[str, Any]:
        steps[0] += 1
        code, sig = run(switched(env, text))
        fails = code == 1 and sig == signature
        return {"setting": setting(env), "fails": fails,
                "signature": signature if fails else "passes" if code == 0 else sig or f"exit {code}"}

    def done(verdict: str, **fields: Any) -> dict[str, Any]:
        say(f"stage: {verdict} ({steps[0]} runs, {time.monotonic() - start:.1f} s)")
        return {"verdict": verdict, "steps": steps[0], "wall_s": round(time.monotonic() - start, 1), **fields}

    off = ask(OFF)
    if off["fails"] or off["signature"] != "passes":
        return done(f"no stage told: with torch.compile disabled ({off['setting']}) it does not run through "
                    f"({off['signature']})", off=off)
    chain: dict[str, bool] = {}
    before = off
    for backend in CHAIN:
        on = ask({"TORCH_BISECT_BACKEND": backend})
        chain[backend] = on["fails"]
        if on["fails"]:
            break
        before = on
    else:
        return done("no stage told: it fails only with the script's own backend; every backend of torch's chain "
                    "passes", chain=chain, off=off)
    probe = ask({"TORCH_BISECT_BACKEND": PROBE})
    if probe["fails"]:
        return done(f"no stage told: {probe['setting']} does not reach the script's compile (it still fails as "
                    "before: it compiles through another door than torch.compile)", chain=chain, off=off, on=probe)
    what = WHAT[backend]
    verdict = (f"{what}: it fails under {on['setting']} and runs through with torch.compile disabled"
               if backend == "eager" else f"{what}: it fails under {on['setting']} and passes under {before['setting']}")
    return done(verdict, backend=backend, chain=chain, env={"TORCH_BISECT_BACKEND": backend}, found=True,
                off=before, on=on)


def doc(fields: dict[str, Any]) -> str:
    """The repro docstring's paragraph: the stage, and the runs that show it as command lines."""
    import textwrap

    from pt2kit_portable import escape

    text = textwrap.fill(escape("Stage (pt2kit minify, with PyTorch's own switches): " + fields["verdict"] + ".",
                                string=True), 110, break_long_words=False, break_on_hyphens=False) + "\n"
    for run in (fields.get("off"), fields.get("on")):
        if run is not None:
            said = "fails (exit 1)" if run["fails"] else "passes (exit 0)" if run["signature"] == "passes" else \
                run["signature"]
            text += f"    {escape(run['setting'], string=True)} python repro.py  # {escape(said, string=True)}\n"
    return text


def where_it_fails(failure: str, graphs: int = 0, kept: tuple[str, str, str] | None = None) -> str:
    """Where the script fails as the stream recorded it, for the repro's docstring: as a kept graph compiles or
    runs (``kept``: its label, its crash's stage, why it was not cut), as Dynamo traces (a torch error, after
    ``graphs`` kept graphs or before any), or under compile where no graph shows it (the script's own check)."""
    if kept is not None:
        label, at, why = kept
        when = ("as the compiled code of a graph Dynamo handed the backend runs" if at.endswith("run") else
                "as the backend compiles a graph Dynamo handed it")
        return f"under torch.compile, {when}\n({label}, which capture kept; {why})"
    if failure != "compile-error":
        return "under torch.compile, where no\ngraph a backend was handed shows the failure"
    if graphs:
        return (f"under torch.compile, as Dynamo traces (it raises after handing a backend\n{graphs} "
                f"graph{'s' * (graphs != 1)}, none of which shows the failure)")
    return "before torch.compile hands a\nbackend any graph (Dynamo raises while it traces)"
