"""repro.py as text, read top to bottom: the minimal graph as module code (the user's lines as comments),
its input specs, backend, config and failure, then the check: only the functions its ``main`` is handed
(:func:`..judge.answer.plan`) and what they reach, embedded by source (:mod:`.embed`), then the call.

Guarantees: the repro imports only torch and the standard library, and its docstring names all else it
needs (the torch it was made on, the device, a backend file, the config it sets); it exits 1 while the
failure is present, 0 once it is gone, 125 (``git bisect run``'s "cannot test") where it cannot run.
Nothing a record or a name holds becomes code: each string enters the docstring or a comment through
pt2kit_portable's ``escape`` (the boot's model files are written by it too), a value as a literal.
The check starts at the line :data:`CHECK` begins (a bug report may show what is above it alone).
"""

from __future__ import annotations

import pprint
import re
import textwrap
from pathlib import Path
from typing import Any

import msgspec

import pt2kit_portable
from pt2kit.runtime.common import precision
from pt2kit.runtime.common.config import literal

from .. import ir
from ..judge import plan
from ..judge.loading import is_code
from ..records import config_strings, typed_config
from . import embed, literals

CHECK = "# ---- the check"  # the line the embedded check starts with: what is above it is the graph and its data


def check(how: dict[str, plan.Role], tool_version: str) -> tuple[list[str], str]:
    """(the imports, the text) of the check a repro handed ``how`` (:func:`..judge.plan.repro`) runs: main and
    those functions, with what they reach, by source (:mod:`.embed`), under a comment that says where from."""
    c = embed.closure([(plan.ANSWER, "main"), *how.values()], docstrings=False, hoist=("torch",))
    whence = ", ".join(m if m != "pt2kit_portable" else f"{m} (version {pt2kit_portable.VERSION})" for m in c.origins())
    head = textwrap.fill(f"{CHECK}: pt2kit minify {_doc(tool_version)}'s, main and what it reaches, by source "
                         f"(the docstrings are in {whence}) ----", 110,
                         subsequent_indent="# ", break_long_words=False, break_on_hyphens=False)
    return c.imports, head + "\n" + c.source()


def _imports(imports: list[str], graph: str, code: str) -> tuple[list[str], list[str]]:
    """(the standard library's imports, at the top; torch's other than ``import torch``, after it): what the
    check (``code``) needs and what the graph names (math.inf, operator.getitem)."""
    wanted = list(imports) + [f"import {m}" for m in ("math", "operator") if re.search(rf"\b{m}\.", graph)]
    torch_ = sorted({i for i in wanted if re.match(r"(import|from) torch\b", i)} - {"import torch"})
    std = {i for i in wanted if not re.match(r"(import|from) torch\b", i)}
    # the standard library's plain imports on one line (sys: what the import of torch below needs on failing);
    # `import a.b` only where the code names a.b (`import importlib.util` comes with the loader's `importlib`)
    plain = sorted({"sys", *(i.split()[1] for i in std if i.startswith("import ") and " as " not in i)})
    plain = [m for m in plain if "." not in m or re.search(rf"\b{re.escape(m)}\b", f"{code}\n{graph}")]
    return ["import " + ", ".join(plain), *sorted(i for i in std if not i.startswith("import ") or " as " in i)], torch_


def _backend_file(backend: str) -> tuple[str, str] | None:
    """(absolute path, name) of a ``FILE.py:NAME`` backend; None for a named one."""
    if ":" not in backend:  # a name torch registers, or aoti
        return None
    path, _, name = backend.rpartition(":")
    return str(Path(path).resolve()), name


def _precision_line(failure: dict[str, Any]) -> str:
    p = failure.get("precision")
    if not p:
        return ""
    if p == precision.HARNESS:
        return " Judged under PyTorch's accuracy-harness precision (TF32 off, deterministic cuDNN, fallback_random)."
    return f" Judged under the model's own precision: {', '.join(precision.differences(p)) or 'the harness settings'}."


def _needs(c: ir.Candidate, backend: str, config: dict[str, dict[str, str]], torch_version: str,
           cpu_precision: bool = False) -> str:
    devices = sorted({s.device for s in c.inputs if s.kind in ir.TENSORS}) or ["cpu"]
    moves = ", without CUDA's precision settings" if cpu_precision else ""  # a repro made on CUDA sets those
    out = [f"torch (made on {torch_version})", f"device {', '.join(devices)} (REPRO_DEVICE=cuda moves the inputs{moves})"]
    if (file := _backend_file(backend)) is not None:
        out.append(f"the backend file {file[0]} (its {file[1]}), loaded by that path")
    settings = " ".join(f"{k}={v}" for k, v in config_strings(config).items())
    out.append(f"the config it sets itself: {settings}" if settings else "no config")
    return "; ".join(out)


def _torch_import(torch_: list[str], inside: bool) -> str:
    """``import torch``, exiting 125 with one line where it does not import (a broken build in a bisect cannot
    test); torch's other imports follow it, ``inside`` the same ``try`` or after it."""
    indented = "".join("    " + i + "\n" for i in torch_) if inside else ""
    return ("try:\n    import torch\n" + indented
            + "except Exception as e:  # a torch that does not import (a broken build in a bisect): cannot test here\n"
            + '    print(f"repro: cannot test here: import torch: {type(e).__name__}: {e}".splitlines()[0], '
              'file=sys.stderr)\n'
            + "    raise SystemExit(125) from None\n" + ("" if inside else "".join(i + "\n" for i in torch_)))


def _config_line(config: dict[str, dict[str, str]]) -> str:
    """CONFIG on one line, each value the literal of the value the workers ran (a tuple stays a tuple):
    written back from the value, never copied from the record's text, so that text cannot be code."""
    return "CONFIG = {" + ", ".join(f"{m!r}: {{" + ", ".join(f"{k!r}: {literal(v)}" for k, v in s.items())
                                    + "}" for m, s in typed_config(config).items()) + "}"


def _doc(text: object) -> str:
    """A record's or a name's text inside the repro's docstring: pt2kit_portable's one escaping rule."""
    return pt2kit_portable.escape(text, string=True)


def _graph_words(level: str, phase: str) -> str:
    if phase == "backward":
        return "backward aten graph"
    return "the graph Dynamo hands the backend" if level == "dynamo" else "forward aten graph"


def _phase_line(phase: str) -> str:
    """How the graph runs, where it is not run as it is an inference graph."""
    if phase == "backward":
        return "\nRuns: the backward graph alone (AOTAutograd's), its inputs the forward's saved values and the tangents."
    if phase == "joint":
        return ("\nRuns: a training step (forward, the loss: each floating output's mean, summed; backward); the "
                "gradients\nof the inputs GRAD marks (those that required grad in the real run) are judged.")
    return ""


def _autocast_line(failure: dict[str, Any], short: bool = False, step: str = "") -> str:
    """Where the script called the graph under torch.autocast: every side runs under it (the short form's main). A
    short form's training ``step``: ``"graded"`` (short_train's, short_nan's) takes its gradients outside it
    (autocast_off_for), as the script's loss.backward() after its block; ``"stepped"`` (an error's or a crash's) runs
    whole inside it, as PyTorch's own after_dynamo repro runs one."""
    if not failure.get("autocast"):
        return ""
    if short and failure.get("phase") == "backward":  # what AOTAutograd traced under it: its casts are in the graph
        return "\n" + textwrap.fill(f"Under: no torch.autocast: the script called the forward under "
                                    f"{_doc(pt2kit_portable.autocast_words(failure['autocast']))}, its backward ran "
                                    "outside it, as loss.backward() after the block does.", 110)
    where = "the whole check (main's with)" if short else "each side's call of the graph (FAILURE['autocast'])"
    how = {"": ", as the script called it.", "graded": ", the gradients taken outside it (autocast_off_for), as "
           "the script's loss.backward() after its block."}.get(step, ", the backward too, as PyTorch's own "
                                                                    "after_dynamo repro runs a training step.")
    return "\n" + textwrap.fill(f"Under: {_doc(pt2kit_portable.autocast_words(failure['autocast']))} around {where}{how}",
                                110, break_long_words=False, break_on_hyphens=False)


def _autocast_main(amp: list[str]) -> list[str]:
    """The short form's main entering the script's autocast (``amp``: :func:`..judge.plan.autocast_entered`'s calls)
    around its check; 125 with one line where this torch has no such autocast (a bisect's older build)."""
    return ["    try:  # the torch.autocast the script called the graph under",
            f"        amp = [{', '.join(amp)}]",
            "    except Exception as e:  # a device type or dtype this torch has no autocast for: cannot test here",
            '        print(f"repro: cannot test here: torch.autocast: {type(e).__name__}: {e}".splitlines()[0], '
            "file=sys.stderr)",
            "        raise SystemExit(125) from None",
            f"    with {', '.join(f'amp[{i}]' for i in range(len(amp)))}:  # as the script called the graph"]


def _dropped_line(dropped: str) -> str:
    """What the model ran under that the repro does not set (the config step dropped it): one line, so a reader
    knows the script's max_autotune or triton.cudagraphs was there, and that the failure does not need it."""
    if not dropped:
        return ""
    return "\n" + textwrap.fill(_doc(f"Config dropped (not needed): {dropped}."), 110, break_long_words=False,
                                break_on_hyphens=False)


def _failure_words(failure: dict[str, Any]) -> str:
    """What fails, as the docstring's "Failure:" line says it (the full form's words for every kind; the short
    form's for all but accuracy, which it judges by another rule)."""
    against = "a float64 run" if failure.get("ref") == "eager64" else "eager"
    rule = "assert_close (kdiff --verdict close)" if failure.get("rule") == "close" else \
        "PyTorch's float64 accuracy rule"
    out = "gradient" if failure.get("phase") == "backward" else "output"
    return {"accuracy": f"the compiled {out} differs from {against} beyond {rule}",
            "compile-error": f"the compiled side raises {failure.get('signature', '')}",
            "crash": f"the process dies with {pt2kit_portable.death_words(failure.get('signature', ''))}" + (
                f" where eager raises {failure['eager']}" if failure.get("eager") else ""),
            "nan": f"the compiled {out} holds {failure.get('signature', '')}",
            "missing-error": f"the compiled side returns where eager raises {failure.get('eager', '')}",
            "violation": f"{failure.get('constraint', '')}: {failure.get('op', '')} in the graph"}[failure["kind"]] \
        .rstrip(".")  # the line ends with a period of its own (an error's message may end with one: "..")


def _together_line(needs: str | None) -> str:
    """The search's line where the failure needs its ops together (an op ordered against another's write), as the
    docstring's next line: said, so no one cuts it further; '' where each op fails alone."""
    return "\n" + textwrap.fill(_doc(needs[:1].upper() + needs[1:]) + ".", 110) if needs else ""


def render(c: ir.Candidate, *, failure: dict[str, Any], backend: str, config: dict[str, dict[str, str]],
           model: str, graph: int, torch_version: str, dynamic: bool, seed: int, tool_version: str,
           level: str = "aten", subgraph: str | None = None, phase: str = "forward", needs: str | None = None,
           dropped: str = "") -> str:
    """``phase``: the graph's (:class:`.ir.Graph`): a ``joint`` one runs as a training step, its gradients judged.
    ``needs``: the search's line where the failure needs its ops together (:attr:`.search.Searcher.needs`).
    ``dropped``: the settings the config step dropped, in words (:func:`.records.dropped`)."""
    what = _failure_words(failure)
    ops = _doc(", ".join(dict.fromkeys(c.ops)))
    file = _backend_file(backend)
    # every string below from a record, a name or the user's files passes _doc: none can close the docstring
    sub = f", its subgraph {_doc(subgraph)}" if subgraph else ""
    together = _together_line(needs)
    how = plan.repro(failure, file or backend, typed_config(config),
                     train=phase == "joint", specs=[s.as_tuple() for s in c.inputs], graph=c.source, level=level)
    needs = textwrap.fill("Needs: " + _doc(_needs(c, backend, config, torch_version, how.get("precision", ("", ""))[1]
                                                  == "use_cpu_precision")) + ".", 110,
                          break_long_words=False, break_on_hyphens=False)  # never inside an escape
    imports, checked = check(how, tool_version)
    std, torch_ = _imports(imports, c.source, checked)
    head = f'''#!/usr/bin/env python3
"""A standalone repro made by pt2kit minify {_doc(tool_version)} on torch {_doc(torch_version)}.

Model: {_doc(model)} ({_graph_words(level, phase)} {int(graph)}{sub}), cut to {int(c.nodes)} op(s): {ops}.{together}
Failure: {_doc(what)}.{_phase_line(phase)}{_autocast_line(failure)}
Backend: {_doc(backend)}{", dynamic shapes" if dynamic else ""}.{_doc(_precision_line(failure))}
{needs}{_dropped_line(dropped)}
`python repro.py` exits 1 while the bug is present, 0 once fixed, 125 with one line on stderr where it cannot run
here (no such device, torch or a backend file missing, eager unable to run the graph): git bisect run's "skip".
"""
{chr(10).join(std)}

{_torch_import(torch_, inside=False)}

'''
    # main is handed the functions that judge this failure by name: what a reader reads next, top to bottom
    call = _call([f"{role}={name}" for role, (_, name) in how.items()]
                 + [("grad=GRAD, " if phase == "joint" else "") + f"dynamic={bool(dynamic)!r}, seed={int(seed)!r}))"])
    body = [c.source,
            f"# the inputs, made by {how['inputs'][1]} below: " + (
                _SPEC_WORDS[how["inputs"][1]] if how["inputs"][1] in _SPEC_WORDS else
                "(\"tensor\", shape, stride, dtype, device, low, high[, real values][, {\"offset\": its storage "
                "offset, \"storage\": its storage's size}]) or (\"scalar\", value); (\"jagged\", <a tensor's spec of "
                "its values>, offsets, ragged_dim[, real values])"),
            "INPUTS = " + literals.inputs_literal(c),
            *(_grad_lines(c.grad) if phase == "joint" else []),
            "# the torch.compile backend the failure was seen with" + (": (file, name), loaded by main" if file else ""),
            f"BACKEND = {file or backend!r}",
            _config_line(config),
            "FAILURE = " + literals.wrapped(failure),
            "", "",
            checked,
            "",
            'if __name__ == "__main__":',
            call,
            ""]
    return head + "\n".join(body)


# what an input spec holds, by the maker a repro embeds where its specs need no more (:func:`..judge.plan.inputs_maker`)
_SPEC_WORDS = {m: f"(\"tensor\", shape, stride, dtype, device, low, high{more}) or (\"scalar\", value){after}"
               for m, more, after in (("make_uniform_inputs", "", "; floats uniform in [low, high]"),
                                      ("make_plain_inputs", "", ""), ("make_valued_inputs", "[, real values]", ""),
                                      ("make_laid_inputs", "[, None, {\"offset\": its storage offset, \"storage\": "
                                       "its storage's size}]", ""),
                                      ("make_shared_inputs", "[, real values or None[, {\"offset\": its storage "
                                       "offset, \"storage\": its storage's size, \"view_of\": the input whose "
                                       "storage it views}]]", ""))}


def _call_lines(line: str, width: int = 110) -> list[str]:
    """A call's line past ``width`` broken after an argument's comma, the rest under its first argument."""
    indent = " " * (line.index("(", line.index("(") + 1) + 1)
    out = [line]
    while len(out[-1]) > width and (cut := out[-1].rfind(", ", len(indent), width)) > len(indent):
        out[-1:] = [out[-1][:cut + 1], indent + out[-1][cut + 2:]]
    return out


def _call(args: list[str], width: int = 110) -> str:
    """``raise SystemExit(main(Repro, INPUTS, BACKEND, CONFIG, FAILURE, ARGS...`` filled to ``width``, each
    argument whole (the last one ends the call)."""
    lines = ["    raise SystemExit(main(Repro, INPUTS, BACKEND, CONFIG, FAILURE,"]
    indent = " " * len("    raise SystemExit(main(")
    for i, a in enumerate(args):
        a += "" if i == len(args) - 1 else ","
        if len(lines) == 1 or len(lines[-1]) + 1 + len(a) > width:
            lines.append(indent + a)
        else:
            lines[-1] += " " + a
    return "\n".join(lines)


_SHORT_ACCURACY = ("Failure: an output or an input as the run left it fails PyTorch's own accuracy rule, "
                   "torch._dynamo.utils.same\nagainst float64 at its benchmark harness's tolerance for the dtype, "
                   "under torch's precision defaults.")


# --backend aoti's words in the short form: what runs, and where (judge.short.aoti)
_AOTI = ("\n(AOT Inductor: torch.export, aoti_compile_and_package, aoti_load_package, by aoti below as torch.compile's "
         "backend).")
_SHORT_STEP = "Runs: a training step (forward, the loss: each floating output's mean, summed; backward)."
# a training step's compile error or crash: each side run as PyTorch's own minifier runs one (judge.short.training)
_MINIFIER_STEP = "Runs: a training step as PyTorch's minifier runs one (run_fwd_maybe_bwd: forward, loss, backward)."
_SHORT_TRAIN = ("Failure: a gradient of an input GRAD marks fails PyTorch's own accuracy rule, torch._dynamo.utils.same "
                "against a\nfloat64 run at its benchmark harness's tolerance for the dtype, under torch's precision "
                "defaults.")


def _grad_lines(grad: list[bool]) -> list[str]:
    """GRAD and what it is: the comment after it where both fit one line."""
    said, value = "the INPUTS that require grad, as in the real run", "GRAD = " + pprint.pformat(grad, width=110,
                                                                                               compact=True)
    return [f"{value}  # {said}"] if "\n" not in value and len(value) + len(said) < 117 else [f"# {said}", value]


def render_short(c: ir.Candidate, *, failure: dict[str, Any], check: tuple[str, str], backend: str,
                 config: dict[str, dict[str, str]], model: str, graph: int, torch_version: str, dynamic: bool,
                 seed: int, tool_version: str, level: str = "aten", subgraph: str | None = None,
                 needs: str | None = None, dropped: str = "", phase: str = "forward") -> str:
    """The short form (where :func:`..judge.plan.short_form` allows it, ``check`` the function it names): the graph,
    its inputs, backend and config, then the check (:mod:`..judge.short`: PyTorch's own accuracy rule, its
    check_str rule on an error's signature, a crash's child) and what it reaches, by source. The caller writes it
    only where it failed in every fresh run; else :func:`render`'s."""
    made = [i for i, s in enumerate(c.inputs) if not s.leaf]  # inputs no leaf in the run: leaves here (plan.leaves)
    c = msgspec.structs.replace(c, inputs=[msgspec.structs.replace(s, leaf=True) for s in c.inputs])
    specs = [s.as_tuple() for s in c.inputs]
    maker = plan.inputs_maker(specs)
    train = phase == "joint"  # a training step: its GRAD, and each side of an error or crash run as one
    graded = train and check[1] in ("short_train", "short_nan")  # the gradients judged, by the workers' own step
    stepped = train and not graded  # an error's, a crash's or a missing error's: PyTorch's minifier's step
    file = _backend_file(backend)  # a user's backend file: (path, name), loaded in main (short.file_backend)
    aoti = backend == "aoti"  # AOT Inductor, run as torch.compile's backend (short.aoti)
    code = any(is_code(v) for s in typed_config(config).values() for v in s.values())  # a pass: short.code_config
    # main enters it (a training step's gradients are taken outside it); a backward graph alone runs outside it
    amp = plan.autocast_entered(failure.get("autocast")) if phase != "backward" else []
    off = bool(amp) and graded
    part = embed.closure([check, maker, *([(plan.SHORT, "training")] if stepped else []),
                          *([(plan.SHORT, "autocast_off_for")] if off else []),
                          *([(plan.SHORT, "file_backend")] if file else []), *([(plan.SHORT, "aoti")] if aoti else []),
                          *([(plan.SHORT, "code_config")] if code else [])], docstrings=False, hoist=("torch",))
    std, torch_ = _imports(part.imports, c.source, part.source())
    sub = f", its subgraph {_doc(subgraph)}" if subgraph else ""
    # a backward graph alone says how it runs; a training step's words are _SHORT_STEP's
    ran = f"Backend: {_doc(backend)}{', dynamic shapes' if dynamic else ''}" + (_AOTI if aoti else ".")
    ran += _autocast_line(failure, short=True, step=("graded" if graded else "stepped") if train else "")
    words = {"short_accuracy": _SHORT_ACCURACY + " " + ran,
             "short_train": _SHORT_STEP + "\n" + _SHORT_TRAIN + " " + ran,
             **({"short_nan": f"{_SHORT_STEP}\nFailure: the compiled gradients hold {_doc(failure['signature'])}. {ran}"}
                if train else {})}.get(
        check[1], (_MINIFIER_STEP + "\n" if stepped else "") + f"Failure: {_doc(_failure_words(failure))}. {ran}")
    needs_line = textwrap.fill("Needs: " + _doc(_needs(c, backend, config, torch_version)) + ".", 110,
                               break_long_words=False, break_on_hyphens=False) + (
        f"\nInputs: {', '.join(f'INPUTS[{i}]' for i in made)}, no leaf in the run (an op's output on a tensor that "
        "requires grad), made a leaf here." if made else "")
    head = f'''#!/usr/bin/env python3
"""A standalone repro made by pt2kit minify {_doc(tool_version)} on torch {_doc(torch_version)}.

Model: {_doc(model)} ({_graph_words(level, phase)} {int(graph)}{sub}), cut to {int(c.nodes)} op(s): {_doc(", ".join(dict.fromkeys(c.ops)))}.{_together_line(needs)}{_phase_line(phase if phase == "backward" else "")}
{words}
{needs_line}{_dropped_line(dropped)}
`python repro.py` exits 1 while the bug is present, 0 once fixed, 125 where it cannot run here (bisect's skip).
"""
{chr(10).join(std)}

{_torch_import(torch_, inside=True)}

'''
    data, args = [_config_line(config)], []
    if check[1] in ("short_error", "short_missing_error"):
        missing = check[1] == "short_missing_error"  # eager's error, else the one the compiled side raises
        whose = ("eager's error, as minify's workers sign it" if missing else
                 "what the compiled side's error, or one it holds, says")
        data += [f"# {whose}: its type and first line, numbers and names masked",
                 "SIGNATURE = " + literals.wrapped(failure["eager" if missing else "signature"])]
        args = ["SIGNATURE"]
        if failure.get("check_str") and not missing:  # --check-str: the text that makes an error count, instead
            data += ["# minify --check-str: an error counts where its text holds this", "CHECK_STR = " + literals.wrapped(
                failure["check_str"])]
            args.append("check_str=CHECK_STR")
    elif check[1] == "short_crash":
        data, args = [*data, "FAILURE = " + literals.wrapped(failure)], ["FAILURE"]
    elif check[1] == "short_nan":
        data += ["# what the compiled outputs hold: nan, inf or nan+inf; \" (eager too)\" where eager's did as well",
                 "SIGNATURE = " + literals.wrapped(failure["signature"])]
        args = ["SIGNATURE"]
    defaults = (["dynamic=True"] if dynamic else []) + ([f"seed={int(seed)!r}"] if seed else [])  # else the check's own
    defaults += (["run=training(GRAD)"] if stepped else []) + (["grad=GRAD"] if graded and check[1] == "short_nan"
                                                                 else []) + (  # main's autocast entries, bare words
        [f"outside=autocast_off_for({[s['device_type'] for s in failure['autocast']]!r})"] if off else [])
    # short_train's own positional GRAD, then the backend (a file's loaded first)
    lead = ("GRAD, " if check[1] == "short_train" else "") + ("file_backend(BACKEND)" if file else
                                                              "aoti if BACKEND == 'aoti' else BACKEND" if aoti else "BACKEND")
    call = f"{check[1]}(Repro, INPUTS, {lead}, {'code_config(CONFIG)' if code else 'CONFIG'}, " \
           f"{', '.join([maker[1], *args, *defaults])})"
    rule = {"short_accuracy": "PyTorch's accuracy rule", "short_train": "PyTorch's accuracy rule on a training step"}.get(
        check[1], f"the {check[1].removeprefix('short_').replace('_', ' ')}'s check")  # the error's, the crash's
    body = [c.source,
            f"# the inputs, made by {maker[1]} below: {_SPEC_WORDS[maker[1]]}",
            "INPUTS = " + literals.inputs_literal(c),
            *(_grad_lines(c.grad) if train else []),
            *(["# the torch.compile backend the failure was seen with: (file, name), loaded by file_backend"] if file
              else []), f"BACKEND = {file or backend!r}",
            *data,
            "", "",
            f"{CHECK}: {rule} as pt2kit minify {_doc(tool_version)} runs it, and what it reaches ----",
            part.source(),
            "",
            'if __name__ == "__main__":',
            *(_autocast_main(amp) if amp else []),
            *_call_lines(f"{'        ' if amp else '    '}raise SystemExit({call})"),
            ""]
    return head + "\n".join(body)
