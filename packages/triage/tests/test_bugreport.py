"""bug-report.md from a stream: the failure's op and the user's line, the repro inline, the bisection from a
`bisect` record (and "Not bisected" without one), the error, the config, the commands; every string from a
record in a code span or block, so a record cannot write markdown."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pt2kit.reportgen import md_code as code
from pt2kit.schema import Bisect, BisectRun, BlobRef, Captured, Diff, Divergence, Header, Metrics, Model, Repro
from pt2kit.schema.stream import encode
from pt2kit.triage.bugreport import build
from pt2kit.triage.steps import Step

REPRO = "import torch\nclass Repro(torch.nn.Module):\n    pass\n\n# ---- the check: by source\nCHECK = 1\n"


def _stream(tmp_path: Path, bisect: bool, divergence: bool = True, backend: str = "inductor", repro: str = REPRO,
            source: str = "train.py:12", called_from: str | None = None) -> Path:
    store = tmp_path / "store"
    sha = hashlib.sha256(repro.encode()).hexdigest()
    blob = store / "blobs" / sha[:2] / f"{sha}.py"
    blob.parent.mkdir(parents=True)
    blob.write_text(repro)
    ref = BlobRef(path=f"blobs/{sha[:2]}/{sha}.py", sha256=sha, size=len(repro), media_type="text/x-python")
    env = {"v": 1, "run": "r1"}
    label = "train.py[0/0]"
    recs = [
        Header(**env, tool="minify", tool_version="0", argv=["minify"], time="t", host="h", python="3.11",
               store=str(store)),
        Model(**env, model=label, file=str(tmp_path / "m.py"), settings={"inductor.cpp.x": "accuracy"},
              captured=Captured(command=["python", "train.py"], compile_id="0/0", code=ref, backend="inductor",
                                function="forward", source=str(tmp_path / source),
                                called_from=called_from and str(tmp_path / called_from))),
        Diff(**env, model=label, output="out[0]", ref="eager", test="inductor", atol=1e-5, rtol=1e-5, passed=False,
             metrics=Metrics(numel=4, max_abs=0.5, mean_abs=0.1, max_rel=1.0, rmse=0.2, mismatches=3,
                             mismatch_share=0.75)),
        *([Divergence(**env, model=label, node="relu", op="aten.relu.default",
                      source=str(tmp_path / "train.py") + ":13", code="return x.relu() ``` # not markdown",
                      phase="forward")] if divergence else []),
        Repro(**env, model=label, path=ref, failure="accuracy", nodes_before=5, nodes_after=1, reproduces=True,
              ops=["aten.relu.default"], reproduced=3, runs=3, config={"cpp.x": "accuracy"}, backend=backend),
    ]
    if bisect:
        recs.append(Bisect(**env, model=label, backend="inductor", chain={"aot_eager": False, "inductor": True},
                           subsystem="lowerings", application=0, applications=1, what="aten.relu.default",
                           found=True, verdict="inductor's lowerings: application 0 of 1 (aten.relu.default)",
                           env={"TORCH_BISECT_SUBSYSTEM": "lowerings"},
                           off=BisectRun(setting="TORCH_BISECT_MAX=-1", fails=False, signature="passes"),
                           on=BisectRun(setting="TORCH_BISECT_MAX=0", fails=True, signature="accuracy")))
    path = tmp_path / "minify.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    return path


def _report(tmp_path: Path, bisect: bool, divergence: bool = True, backend: str = "inductor", repro: str = REPRO) -> str:
    steps = [Step("capture", ["pt2kit", "capture", "--", "python", "train.py"], code=0),
             Step("minify", ["minify", "-o", "t/repro.py"], tmp_path / "t" / "kdiff.ndjson",
                  tmp_path / "t" / "minify.ndjson", code=1)]
    facts = {"PyTorch version": "2.13.0+cpu", "OS": "Debian", "triton": "3.6.0", "interpreter": "/usr/bin/python3"}
    return build(_stream(tmp_path, bisect, divergence, backend, repro), steps, facts, ["python", "train.py"], tmp_path, 1,
                 ["kdiff: skipped: `x` crashed"])


def test_the_report_says_what_fails_where_with_its_repro_bisection_versions_config_and_commands(tmp_path):
    md = _report(tmp_path, bisect=True)
    assert md.splitlines()[0] == "# [inductor] wrong results in aten.relu.default at train.py:13 (train.py\\[0/0\\])"
    assert "  - in your code: `train.py:13`: ````return x.relu() ``` # not markdown````" in md
    assert f"```python\n{REPRO.rstrip()}\n```" in md  # the whole file, inline: it fits
    assert "needs torch alone and exits 1 while the bug is there (it failed the same way in 3 of 3 fresh runs), " \
           "0 once it is fixed; cut from 5 to 1 nodes: `aten.relu.default`" in md
    # PyTorch's bug template: the bug described with its code and error, then the versions
    assert [ln for ln in md.splitlines() if ln.startswith("### ")][:2] == ["### 🐛 Describe the bug", "### Versions"]
    assert "- inductor's lowerings: application 0 of 1 \\(aten.relu.default\\)" in md  # escaped, shown as is
    assert "  - backends: `aot_eager` passes, `inductor` fails" in md
    assert "  - checked, culprit off: `TORCH_BISECT_MAX=-1` passes\n" in md  # not "passes (passes)"
    assert "  - checked, culprit on: `TORCH_BISECT_MAX=0` fails (accuracy)\n" in md
    assert "| `out[0]` | 0.5 | 3 of 4 | `eager` | `inductor` | - |" in md
    assert "PyTorch version: 2.13.0+cpu\nOS: Debian\ntriton: 3.6.0\ninterpreter: /usr/bin/python3" in md
    assert "inductor.cpp.x = accuracy" in md
    assert "pt2kit capture -- python train.py   # exit 0\nminify -o t/repro.py < t/kdiff.ndjson > t/minify.ndjson   # exit 1" in md
    assert "What triage decided between the steps:\n\n```\nkdiff: skipped: `x` crashed\n```" in md


def test_without_a_bisect_record_the_report_says_not_bisected(tmp_path):
    md = _report(tmp_path, bisect=False)
    assert "#### Bisection\n\nNot bisected: the stream holds no `bisect` record" in md


def test_a_code_span_outlasts_the_backticks_it_holds():
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    assert code("two\nlines") == "`two\\nlines`"  # one line, its newline shown


def test_without_the_ops_own_line_the_report_says_the_line_is_the_call_of_the_compiled_code(tmp_path):
    # a compile error has no divergence: the line known is the one that called the compiled function, which
    # the title gave as the op's own ("... in torch.sigmoid at s4.py:42", the op being at line 25)
    md = _report(tmp_path, bisect=False, divergence=False)
    assert md.splitlines()[0] == "# [inductor] wrong results in aten.relu.default called at train.py:12 (train.py\\[0/0\\])"
    assert ("  - in your code: `train.py:12` (the call of the compiled code; the op's own line is not known)"
            in md.splitlines())


def test_a_model_a_library_wraps_names_the_users_line_that_called_it(tmp_path):
    # a Hugging Face model is compiled at its library's wrapper and its op is in the library's code: the
    # report named those two lines and never the script's call (capture's "called from train.py:40")
    store = _stream(tmp_path, bisect=False, source="lib/generic.py:933", called_from="train.py:40")
    md = build(store, [], {}, ["python", "train.py"], tmp_path, 1)
    assert "  - the compiled code: `forward` at `lib/generic.py:933`, called from `train.py:40`" in md.splitlines()
    # where the row's line is that call (no op line known), it is said once, as the line in the user's code
    md = build(_stream(tmp_path / "b", bisect=False, divergence=False, source="train.py:40", called_from="train.py:40"),
               [], {}, ["python", "train.py"], tmp_path / "b", 1)
    assert "called from" not in md and "  - in your code: `train.py:40` (the call of the compiled code" in md


def test_a_run_whose_only_findings_are_graph_breaks_says_them_in_its_title(tmp_path):
    # triage exited 1 (guardscan's breaks) while the report's title said "no failure found" and nothing more
    from pt2kit.schema import GraphBreak

    env, label = {"v": 1, "run": "r1"}, "b.py[0/0]"
    at = [("b.py:12", "print"), ("b.py:13", "item"), ("b.py:13", "item")]  # one met twice
    recs = [Header(**env, tool="kdiff", tool_version="0", argv=["kdiff"], time="t", host="h", python="3.11",
                   store=str(tmp_path)),
            Diff(**env, model=label, output="out[0]", ref="eager", test="inductor", atol=1e-5, rtol=1e-5, passed=True),
            *(GraphBreak(**env, reason=why, source=str(tmp_path / a)) for a, why in at)]
    path = tmp_path / "kdiff.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    md = build(path, [], {}, ["python", "b.py"], tmp_path, 1)
    assert md.splitlines()[0] == "# pt2kit triage: no failure found; 2 graph breaks \\(at b.py:12, b.py:13\\)"
    assert "nothing crashed; guardscan found 2 graph breaks \\(at b.py:12, b.py:13\\) (under Also found, below)." in md


def test_a_repro_of_a_backend_of_the_users_file_needs_that_file_and_says_so(tmp_path):
    # the repro loads the backend from the user's file (its docstring says so): "torch alone" was false
    md = _report(tmp_path, bisect=False, backend=f"{tmp_path / 'train.py'}:my_backend")
    assert "needs torch and `train.py` (its backend `my_backend`, loaded from there) and exits 1" in md
    assert "torch alone" not in md


def test_where_minify_stopped_the_report_says_what_it_said(tmp_path):
    # it said "minify made none (nothing failed, or the failure could not be re-created)" after minify's
    # one-line refusal, which the README says the report gives
    from pt2kit.schema import Crash, Error

    env, label = {"v": 1, "run": "r1"}, "t.py[0/0@step3]"
    ref = BlobRef(path="blobs/ab/ab.py", sha256="ab" * 32, size=1, media_type="text/x-python")
    why = f"{label}: cannot judge: the captured graph does not run here: output 0 is float32[6, 2]"
    recs = [Header(**env, tool="minify", tool_version="0", argv=["minify"], time="t", host="h", python="3.11",
                   store=str(tmp_path)),
            Model(**env, model=label, file=str(tmp_path / "m.py"),
                  captured=Captured(command=["python", "t.py"], compile_id="0/0", code=ref, backend="inductor")),
            Crash(**env, model=label, stage="run", exception="RuntimeError", message="picky kernel", step=3),
            Error(**env, model=label, message=why, exit_code=2)]
    path = tmp_path / "minify.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    md = build(path, [], {}, ["python", "t.py"], tmp_path, 2)
    assert f"#### Minimal repro\n\nNo repro: minify stopped: `{why}`" in md


def test_where_kdiff_could_not_judge_a_graph_the_report_never_says_every_graph_passed(tmp_path):
    # a graph kdiff refused ("cannot judge", exit 2) was reported as "every compiled graph kdiff judged passed"
    from pt2kit.schema import Error

    env, label = {"v": 1, "run": "r1"}, "t.py[0/0]"
    why = f"{label}: cannot judge: the captured graph does not run here: output 0 is float32[32, 10]"
    recs = [Header(**env, tool="kdiff", tool_version="0", argv=["kdiff"], time="t", host="h", python="3.11",
                   store=str(tmp_path)),
            Error(**env, model=label, message=why, exit_code=2)]
    path = tmp_path / "kdiff.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    md = build(path, [], {}, ["python", "t.py"], tmp_path, 2)
    assert f"No tool found a failure, but not every graph was judged:\n\n- kdiff stopped: `{why}`" in md
    assert "every compiled graph kdiff judged passed" not in md
    # the title said "no failure found" alone, as if kdiff had judged it (a decomposition it could not load)
    assert md.splitlines()[0] == "# pt2kit triage: no failure found, but not every graph was judged (kdiff stopped)"


def test_a_crash_naming_no_graph_is_titled_so_never_with_a_placeholder_name(tmp_path):
    # fullgraph=True over a graph break: Dynamo raised before any backend got a graph; the title ended "((model))"
    from pt2kit.schema import Crash

    env = {"v": 1, "run": "r1"}
    recs = [Header(**env, tool="capture", tool_version="0", argv=["pt2kit", "capture"], time="t", host="h",
                   python="3.11", store=str(tmp_path)),
            Crash(**env, stage="run", exitcode=1, exception="Unsupported", message="Failed to trace builtin operator")]
    path = tmp_path / "capture.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    title = build(path, [], {}, ["python", "t.py"], tmp_path, 2).splitlines()[0]
    assert title == "# [torch.compile] Unsupported during run: Failed to trace builtin operator (no graph was kept)"


def test_a_failure_inside_dynamo_is_titled_at_the_users_line_during_compile(tmp_path):
    # issue 57, an unseen real bug (torch.combinations under dynamic=True): Dynamo raised tracing the script, no
    # graph was kept, and the report said "compile error (no graph was kept)" and "during run", the stage the
    # command's end, though Dynamo's own error names the user's line it failed at
    import runpy

    import pytest

    from pt2kit.schema import Crash

    script = tmp_path / "t.py"
    script.write_text("import torch\n\n\ndef f(x):\n    y = x + 1\n    torch._dynamo.graph_break()\n    return y\n\n\n"
                      "torch.compile(f, backend='eager', fullgraph=True)(torch.ones(2))\n")
    with pytest.raises(Exception) as raised:  # real torch.compile: its message is what capture keeps
        runpy.run_path(str(script))
    env = {"v": 1, "run": "r1"}
    recs = [Header(**env, tool="capture", tool_version="0", argv=["pt2kit", "capture"], time="t", host="h",
                   python="3.11", store=str(tmp_path)),
            Crash(**env, stage="run", exitcode=1, exception=type(raised.value).__name__, message=str(raised.value))]
    path = tmp_path / "capture.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    md = build(path, [], {}, ["python", "t.py"], tmp_path, 1)
    title = md.splitlines()[0]  # the error's first line sits between, escaped for markdown
    assert title.startswith("# [torch.compile] Unsupported during compile: ") and title.endswith(
        " at t.py:6 (no graph was kept)"), title
    assert "  - in your code: `t.py:6`: `torch._dynamo.graph_break()`\n  - the stage: compile\n" in md, md


def test_a_process_killed_in_a_graphs_call_is_one_failure_under_the_graph_and_its_end_the_processs(tmp_path):
    # the killed call's crash names its graph, the command's end names none: the report listed a second
    # "- `(model)`: SIGSEGV during run" bullet; alone, that end is the process's, never a model's
    from pt2kit.schema import Crash

    env, label = {"v": 1, "run": "r1"}, "t.py[0/0]"
    head = Header(**env, tool="capture", tool_version="0", argv=["pt2kit", "capture"], time="t", host="h",
                  python="3.11", store=str(tmp_path))
    graph = Crash(**env, model=label, stage="run", signal="SIGSEGV", step=1, phase="forward",
                  message="killed by SIGSEGV in its compiled forward at call 1")
    end = Crash(**env, stage="run", signal="SIGSEGV", exitcode=-11, message="the command was killed by SIGSEGV")
    for recs in ([head, graph, end], [head, end]):
        path = tmp_path / "capture.ndjson"
        path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
        md = build(path, [], {}, ["python", "t.py"], tmp_path, 1)
        bullets = [line for line in md.splitlines() if line.startswith("- `")]
        error = md[md.index("#### Error / verdict"):md.index("#### Bisection")]
        if len(recs) == 3:
            assert bullets == [f"- `{label}`: SIGSEGV during run: killed by SIGSEGV in its compiled forward at call 1"]
            assert error.count("run: `SIGSEGV`") == 2 and "`the command was killed by SIGSEGV`" in error, error
        else:
            assert bullets == ["- `(the process)`: SIGSEGV during run: the command was killed by SIGSEGV"], md
            assert md.splitlines()[0] == "# [torch.compile] SIGSEGV during run: the command was killed by SIGSEGV " \
                                         "(no graph was kept)"
            assert "run: `SIGSEGV` `the command was killed by SIGSEGV`" in error, error


HEADINGS = [("h3", "🐛 Describe the bug"), ("h4", "What fails"), ("h4", "Minimal repro"), ("h4", "Error / verdict"),
            ("h4", "Bisection"), ("h4", "Non-default config"), ("h3", "Versions"), ("h3", "How to rerun each step")]


def test_a_hostile_script_path_and_exception_message_write_no_markdown_or_html(tmp_path):
    # issue 55: a path with a newline and "<!--", an exception message with <details>, a link and a comment
    # landed raw in the title, "What fails" and the bisection: GitHub folded 5 of the 7 sections into a
    # comment and showed a link the user never wrote
    from markdown_it import MarkdownIt

    from pt2kit.schema import Crash

    env, label = {"v": 1, "run": "r1"}, "t.py[0/0]"
    script = str(tmp_path / "evil\n<!--dir") + "/t.py:12"
    message = "boom <details><summary>x</summary> [click here](https://evil.example/) <!-- hidden"
    ref = BlobRef(path="blobs/ab/ab.py", sha256="ab" * 32, size=1, media_type="text/x-python")
    recs = [Header(**env, tool="minify", tool_version="0", argv=["minify"], time="t", host="h", python="3.11",
                   store=str(tmp_path)),
            Model(**env, model=label, file=str(tmp_path / "m.py"),
                  captured=Captured(command=["python", "t.py"], compile_id="0/0", code=ref, backend="inductor",
                                    function="forward", source=script)),
            Crash(**env, model=label, stage="run\n<!--", exception="RuntimeError", message=message),
            Bisect(**env, model=label, verdict=f"no stage told: {message}", found=False, subsystem="a\n```x")]
    path = tmp_path / "minify.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    md = build(path, [], {"error": message}, ["python", "t.py"], tmp_path, 1)
    lines = md.splitlines()
    for level, heading in HEADINGS:
        assert f"{'#' * int(level[1])} {heading}" in lines
    # the record's text is there, visibly, but never as markup: outside code spans no "<" and no "[text]("
    prose = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", md, flags=re.M | re.S)  # fenced blocks, then code spans
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", prose.replace("\\`", ""))
    assert "<!--" not in prose and "<details>" not in prose and "](" not in prose.replace("\\](", "")
    assert "\\[click here\\]\\(https://evil.example/\\)" in md
    assert "evil\\\\n&lt;\\!\\-\\-dir" in lines[0]  # the newline in a one-line field is a visible \n
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert re.findall(r"<(h[2-4])>(.*?)</h[2-4]>", html) == HEADINGS
    assert html.count("<h1>") == 1 and "&lt;!--" in html
    assert "<a " not in html and "<details" not in html and "<!--" not in html and "<summary" not in html


def test_a_repro_too_long_for_an_issue_body_leaves_its_graph_inline_and_is_attached(tmp_path):
    """GitHub takes 65,536 characters in an issue body (issue 58: every report was 83-87 KB, its repro.py
    inline whole). Where the whole file does not fit, the report shows what is above its check, the graph
    and its inputs, and names the file to attach; it always fits."""
    long = REPRO.replace("CHECK = 1\n", "".join(f"CHECK_{i} = {i}  # the check's code\n" for i in range(3000)))
    md = _report(tmp_path, bisect=True, repro=long)
    assert len(long) > 65_536 > len(md)
    assert "```python\nimport torch\nclass Repro(torch.nn.Module):\n    pass\n```" in md  # graph and inputs, inline
    assert "CHECK_0" not in md
    assert "Its 3005 lines do not fit an issue body: its graph and inputs are below; the whole file is attached " \
           "(`blobs/" in md
    assert "### Versions" in md and "#### Bisection" in md  # the rest of the report is all there


def test_a_report_past_the_limit_with_sections_it_has_not_is_written_and_names_only_what_it_left_out():
    # issue 57, an unseen real bug (#181366): a C++ compile error's whole g++ output put the report past GitHub's
    # limit, it had no "Also found" section, and triage ended "internal error: IndexError", no bug-report.md
    from pt2kit.triage.bugreport import LIMIT, fit

    parts = [["# title"], ["#### What fails", "x"], ["#### Minimal repro", "y" * 30_000],
             ["#### Error / verdict", "e" * 30_000], ["#### Bisection", "b"], [], ["### Versions", "v"],
             ["### How to rerun each step", "r" * 20_000], []]
    md = fit(parts, lambda: parts)
    assert len(md) < LIMIT and "y" * 30_000 in md and "e" * 30_000 in md and "### Versions\nv" in md
    assert md.rstrip().endswith("(Left out to fit GitHub's 65,536-character limit on an issue body: How to rerun "
                                "each step; triage's folder holds them, in report.html and the streams.)"), md[-300:]


def test_a_compile_errors_long_compiler_output_is_cut_to_its_error_lines_and_the_error_stays_in(tmp_path):
    # issue 57, an unseen real bug (#181366): the crash's message, g++'s whole output (100 KB, hundreds of
    # warnings), went into Error / verdict whole, the report passed GitHub's limit and that section, the one
    # that says what broke, was left out
    from pt2kit.schema import Crash
    from pt2kit.triage.bugreport import LIMIT

    env = {"v": 1, "run": "r1"}
    warnings = "".join(f"vec256_int.h:{i}:7: warning: overflow in conversion from 'int' to 'char'\n" for i in range(1500))
    message = f"CppCompileError: C++ compile error\n\nCommand:\ng++ k.cpp\n\nOutput:\n{warnings}" \
              "k.cpp:113:44: error: 'decltype' evaluates to 'float', which is not a class or enumeration type\n"
    recs = [Header(**env, tool="capture", tool_version="0", argv=["pt2kit", "capture"], time="t", host="h",
                   python="3.11", store=str(tmp_path)),
            Crash(**env, stage="run", exitcode=1, exception="InductorError", message=message)]
    path = tmp_path / "capture.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    md = build(path, [], {}, ["python", "t.py"], tmp_path, 1)
    error = md[md.index("#### Error / verdict"):md.index("#### Bisection")]
    assert len(md) < LIMIT and "Left out" not in md, md[-400:]
    assert "k.cpp:113:44: error: 'decltype' evaluates to 'float'" in error and "warning" not in error, error
    assert f"({len(message):,} characters in all: the streams in triage's folder hold the whole message)" in error


def test_a_report_past_the_limit_even_so_leaves_sections_out_from_the_end_and_says_which():
    from pt2kit.triage.bugreport import LIMIT, fit

    parts = [["# title"], ["#### What fails", "x"], ["#### Minimal repro", "y" * 40_000],
             ["#### Error / verdict", "e"], ["#### Bisection", "b" * 20_000], ["#### Non-default config", "c"],
             ["### Versions", "v"], ["### How to rerun each step", "r" * 20_000], ["### Also found (guardscan)", "a"]]
    md = fit(parts, lambda: parts)
    assert len(md) < LIMIT and "y" * 40_000 in md and "### Versions\nv" in md
    assert md.rstrip().endswith("(Left out to fit GitHub's 65,536-character limit on an issue body: Also found "
                                "\\(guardscan\\), How to rerun each step; triage's folder holds them, in report.html "
                                "and the streams.)")
    assert "b" * 20_000 in md  # what fits once the later sections are out stays


def _script_repro_stream(tmp_path: Path, unrunnable: str | None = None) -> Path:
    """A stream whose repro is the script reduced (no model named), bisected; its one graph ran, or did not run
    alone (capture's ``unrunnable``)."""
    from pt2kit.schema import Crash

    env = {"v": 1, "run": "r1"}
    text = '"""the script reduced"""\nimport torch\n'
    sha = hashlib.sha256(text.encode()).hexdigest()
    (tmp_path / "blobs" / sha[:2]).mkdir(parents=True)
    (tmp_path / "blobs" / sha[:2] / f"{sha}.py").write_text(text)
    ref = BlobRef(path=f"blobs/{sha[:2]}/{sha}.py", sha256=sha, size=len(text), media_type="text/x-python")
    sig = "AssertionError: call <n> at: assert torch.equal(e, c)"
    recs = [Header(**env, tool="capture", tool_version="0", argv=["pt2kit", "capture"], time="t", host="h",
                   python="3.11", store=str(tmp_path)),
            Model(**env, model="g.py[0/0]", file=str(tmp_path / "m.py"),
                  captured=Captured(command=["python", "g.py"], compile_id="0/0", code=ref, unrunnable=unrunnable)),
            Crash(**env, stage="run", exitcode=1, exception="AssertionError", message="call 1: eager [-2.0]"),
            Repro(**env, path=ref, failure="accuracy", nodes_before=0, nodes_after=0, reproduces=True, signature=sig,
                  reproduced=2, runs=2),
            Bisect(**env, backend="eager", chain={"eager": True}, found=True, env={"TORCH_BISECT_BACKEND": "eager"},
                   verdict="Dynamo alone (the eager backend): it fails under TORCH_BISECT_BACKEND=eager",
                   off=BisectRun(setting="TORCHDYNAMO_DISABLE=1", fails=False, signature="passes"),
                   on=BisectRun(setting="TORCH_BISECT_BACKEND=eager", fails=True, signature=sig))]
    path = tmp_path / "minify.ndjson"
    path.write_bytes(b"".join(encode(r) + b"\n" for r in recs))
    return path


def test_a_script_level_repro_where_no_captured_graph_shows_it_has_its_bisection_and_says_so(tmp_path):
    # pytorch#196173: Dynamo folds `holder.current is holder.left` unguarded; its one graph passes kdiff, the
    # script's own assert fails; minify reduced the script (no model named) and told the stage (no model named)
    md = build(_script_repro_stream(tmp_path), [], {}, ["python", "g.py"], tmp_path, 1)
    assert md.splitlines()[0].endswith("(no captured graph shows it)"), md.splitlines()[0]
    assert "your script reduced at the source level (no captured graph shows it)" in md
    assert "- Dynamo alone \\(the eager backend\\): it fails under TORCH\\_BISECT\\_BACKEND=eager\n" in md
    assert "  - checked, culprit off: `TORCHDYNAMO_DISABLE=1` passes\n" in md


def test_a_script_level_repro_whose_captured_graph_does_not_run_alone_says_that_not_that_none_shows_it(tmp_path):
    # pytorch#186807: the graph calls a custom op only the script registers, so no tool could run it alone;
    # the title said "no captured graph shows it", as if the graph had run and passed
    why = "the model file:12: loading the model file raised AttributeError: no op named add_into"
    md = build(_script_repro_stream(tmp_path, unrunnable=why), [], {}, ["python", "g.py"], tmp_path, 1)
    assert md.splitlines()[0].endswith("(its captured graph does not run alone)"), md.splitlines()[0]
    assert "your script reduced at the source level (its captured graph does not run alone)" in md
