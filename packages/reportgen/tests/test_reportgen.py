from __future__ import annotations

import io
import re
import subprocess
import sys

import msgspec
from rgtest import EVIL, full_stream, header

from pt2kit.reportgen import collect, render
from pt2kit.schema import Diff, RecordWriter, read_stream

CAPTURED_LINE = ("python train.py --steps 3: compile id 1/2, forward at /src/train.py:40, inductor (max-autotune), "
                 "grad, rank 1, values small; the backend raised RuntimeError: boom")


def page(tmp_path, **kw):
    data = full_stream(tmp_path / "store", **kw)
    c = collect(read_stream(["-"], stdin=io.BytesIO(data)))
    return render(c, "html", out_dir=tmp_path, store=None), c


def test_the_page_leads_with_what_fails_its_line_stage_and_repro(tmp_path):
    # a reader triaging wants the failure first: the violations (profile findings), guards and benchmarks after
    html, _ = page(tmp_path)
    sections = re.findall(r'<section id="(\w+)">', html)
    assert sections[:5] == ["fails", "summary", "diffs", "crashes", "repros"], sections
    assert re.findall(r'<nav>\s*<a href="#(\w+)">', html) == ["fails"]
    fails = html[html.index('<section id="fails">'):]
    fails = fails[:fails.index("</section>")]
    rows = fails.split('<tr class="fails">')[1:]
    assert len(rows) == 1 and rows[0].startswith("<td>m.py</td>")  # one row a failing model, not one a record
    for shown in ("1 of 2 outputs and gradients fail against the reference (out[0])",
                  "kernel cpp_fused_log_1 writes NaN/Inf", "SIGSEGV during run",
                  # the user's own line first (the divergence's, here the op's own), then the op
                  '<code class="mine">/src/m.py:9</code><br><code>aten.relu.default</code>', "y = torch.relu(x)",
                  "40 → 2 ops (<code>aten.relu.default, aten.mul.Tensor</code>), failed 3 of 3 fresh runs",
                  # the compiler stage minify's bisection names, beside the repro, with torch's switches
                  "<span class=\"\">Inductor: lowerings, application 0 of 2 (relu: aten.relu.default)</span><br>"
                  "<code class=\"muted\">TORCH_BISECT_BACKEND=inductor TORCH_BISECT_SUBSYSTEM=lowerings "
                  "TORCH_BISECT_MAX=0</code>"):
        assert shown in rows[0], shown
    assert EVIL not in fails and "other.py" not in fails  # findings of a profile are not failures of the compiler


def test_where_a_failure_is_in_a_captured_graph_the_page_leads_with_the_users_line(tmp_path, monkeypatch):
    # issue 58: "where" gave only the store's blob path (/tmp/x/store/blobs/b0/b0a2...py:142) of a graph compiled
    # whole; the user's own line, the call of the compiled code, leads now, as they type it (cwd-relative)
    from pt2kit.schema import BlobRef, Captured, Divergence, Model

    monkeypatch.chdir(tmp_path)
    blob = f"{tmp_path}/store/blobs/b0/{'b0' * 32}.py:142"
    out = io.BytesIO()
    w = RecordWriter(out, run="run-kd")
    header(w, "kdiff", tmp_path / "store")
    w.emit_new(Model, model="train.py[0/0]", file="/m.py", captured=Captured(
        command=["python", "train.py"], compile_id="0/0", called_from=f"{tmp_path}/examples/train.py:32",
        code=BlobRef(path="blobs/b0/b0.py", sha256="b0" * 32, size=1, media_type="text/x-python")))
    w.emit_new(Diff, model="train.py[0/0]", output="out[0]", ref="eager", test="inductor", atol=1e-5, rtol=1.3e-6,
               passed=False)
    w.emit_new(Divergence, model="train.py[0/0]", node="relu", op="aten.relu.default", source=blob)
    html = render(collect(read_stream(["-"], stdin=io.BytesIO(out.getvalue()))), "html", out_dir=tmp_path, store=None)
    where = re.search(r'<tr class="fails">(?:<td>.*?</td>){2}<td>(.*?)</td>', html, re.S)[1]
    assert where == ('<code class="mine">examples/train.py:32</code> <span class="muted">(the call of the compiled '
                     f'code)</span><br><code>aten.relu.default</code> at <code class="muted">store/blobs/b0/{"b0" * 32}'
                     '.py:142</code>')
    assert '<table class="fails">' in html and "table.fails { table-layout: fixed; }" in html  # fits the window


def test_a_stream_where_nothing_fails_has_no_failure_section(tmp_path):
    out = io.BytesIO()
    w = RecordWriter(out, run="run-kd")
    header(w, "kdiff", tmp_path / "store")
    w.emit_new(Diff, model="m.py", output="out[0]", ref="eager64", test="inductor", atol=1e-5, rtol=1.3e-6,
               passed=True)
    html = render(collect(read_stream(["-"], stdin=io.BytesIO(out.getvalue()))), "html", out_dir=tmp_path, store=None)
    assert '<section id="diffs">' in html and 'id="fails"' not in html and "What fails" not in html


def test_a_script_dying_of_a_graphs_failure_is_one_failure_under_the_graph(tmp_path):
    # capture writes the graph's crash, then the script's own exit of it (no model): the page listed a second
    # failure "(model): BackendCompilerFailed during run"; a model-less crash of anything else is still listed
    from pt2kit.schema import Crash

    out = io.BytesIO()
    w = RecordWriter(out, run="run-cap")
    header(w, "capture", tmp_path / "store")
    w.emit_new(Crash, model="s.py[0/1]", stage="compile", exception="RuntimeError", message="picky: no sigmoid")
    w.emit_new(Crash, stage="run", exitcode=1, exception="BackendCompilerFailed",
               message="backend='picky' raised:\nRuntimeError: picky: no sigmoid\n\nSet TORCHDYNAMO_VERBOSE=1")
    one = render(collect(read_stream(["-"], stdin=io.BytesIO(out.getvalue()))), "html", out_dir=tmp_path, store=None)
    w.emit_new(Crash, stage="run", exitcode=1, exception="KeyError", message="'labels'")
    two = render(collect(read_stream(["-"], stdin=io.BytesIO(out.getvalue()))), "html", out_dir=tmp_path, store=None)
    rows = [h[h.index('<section id="fails">'):].split("</section>")[0].split('<tr class="fails">')[1:] for h in (one, two)]
    assert [len(r) for r in rows] == [1, 2] and rows[0][0].startswith("<td>s.py[0/1]</td>"), rows
    assert "RuntimeError during compile: picky: no sigmoid" in rows[0][0] and rows[1][1].startswith(
        "<td>(the process)</td><td>KeyError during run: &#39;labels&#39;</td>"), rows


def test_a_process_killed_in_a_graphs_call_is_that_graphs_failure_and_an_end_naming_no_graph_is_the_process(tmp_path):
    # capture writes the killed call's crash (naming its graph), then the command's end or, recovered in
    # process, the block's (no model): the page listed a second failure "(model): SIGSEGV during run"
    from pt2kit.schema import Crash

    out = io.BytesIO()
    for run, end in (("cap", "the command was killed by SIGSEGV"), ("nb", "the process running it (pid 42) was killed by SIGSEGV")):
        w = RecordWriter(out, run=run)
        header(w, "capture", tmp_path / "store")
        w.emit_new(Crash, model=f"{run}.py[0/0]", stage="run", signal="SIGSEGV", step=1, phase="forward",
                   message="killed by SIGSEGV in its compiled forward")
        w.emit_new(Crash, stage="run", signal="SIGSEGV", exitcode=-11 if run == "cap" else None, message=end)
    w = RecordWriter(out, run="hang")  # no graph's crash accounts for this one: the process's own end
    header(w, "capture", tmp_path / "store")
    w.emit_new(Crash, stage="run", signal="SIGKILL", exitcode=-9, message="the command was killed by SIGKILL")
    c = collect(read_stream(["-"], stdin=io.BytesIO(out.getvalue())))
    html = render(c, "html", out_dir=tmp_path, store=None)
    fails = html[html.index('<section id="fails">'):].split("</section>")[0]
    assert re.findall(r'<tr class="fails"><td>(.*?)</td><td>(.*?)</td>', fails) == [
        ("cap.py[0/0]", "SIGSEGV during run: killed by SIGSEGV in its compiled forward"),
        ("nb.py[0/0]", "SIGSEGV during run: killed by SIGSEGV in its compiled forward"),
        ("(the process)", "SIGKILL during run: the command was killed by SIGKILL")]
    assert "(model)" not in html and "<h3>(the process): SIGKILL during run</h3>" in html
    assert "### Crash: \\(the process\\) (SIGKILL during run)" in render(c, "md")
    assert "CRASH (the process): SIGKILL during run: the command was killed by SIGKILL" in render(c, "text")


def test_every_kind_present_gets_its_section_with_counts(tmp_path):
    html, _ = page(tmp_path)
    for section in ("summary", "script", "violations", "diffs", "guards", "kernels", "bench", "graphs", "repros", "crashes",
                    "errors"):
        assert f'<section id="{section}">' in html, section
    cards = dict(re.findall(r'data-count="(\w+)"><b>(\d+)</b>', html))
    assert cards == {"findings": "4", "failing_diffs": "1", "breaks": "1", "recompiles": "1",
                     "nonfinite_kernels": "1", "crashes": "1", "errors": "1"}
    assert "kernel_timeline</code> (1)" in html  # unknown kinds are counted and named once
    assert html.count("<svg") == 3  # findings by constraint, kernel ranges, latency
    assert "First divergence" in html and "aten.relu.default" in html
    assert "torch._dynamo.mark_dynamic(x, 0)" in html and "GB0124" in html
    assert "uninitialised output buffer (before launch)" in html
    assert 'src="data:image/png;base64,' in html  # the heatmap blob is embedded
    assert "def forward(self, x):" in html  # small code blob embedded
    assert html.count("fxcheck 1.0.0") >= 1 and "2.13.0" in html
    script = html[html.index('<section id="script">'):]
    script = script[:script.index("</section>")]
    assert script.count('<tr class="captured">') == 1 and "<td>train.py[r1:1/2]</td>" in script  # once, though forwarded
    assert (f"<code>{CAPTURED_LINE}</code>" in script and "class Graph(torch.nn.Module):" in script)
    repro = html[html.index('<section id="repros">'):]
    repro = repro[:repro.index("</section>")]
    for shown in ("CppCompileError: C++ compile error", "40 → 2", "aten.relu.default, aten.mul.Tensor",
                  "4096 → 1", "cpp.inject_relu_bug_TESTING_ONLY=compile_error", "7 in 12.5 s", "3 of 3"):
        assert shown in repro, shown


def test_absent_kinds_have_no_section(tmp_path):
    from pt2kit.schema import Violation
    from pt2kit.schema.stream import RecordWriter

    out = io.BytesIO()
    RecordWriter(out, run="r").emit_new(Violation, constraint="dtype", message="m", phase="forward")
    c = collect(read_stream(["-"], stdin=io.BytesIO(out.getvalue())))
    html = render(c, "html")
    assert '<section id="violations">' in html
    for absent in ("diffs", "guards", "kernels", "bench", "graphs", "repros", "crashes", "errors"):
        assert f'<section id="{absent}">' not in html


def test_every_string_is_escaped_and_no_script_can_run(tmp_path):
    html, _ = page(tmp_path)
    assert EVIL not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts == ['<script type="application/json" id="pt2kit-summary">']
    data = html.split('id="pt2kit-summary">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and msgspec.json.decode(data)["counts"]["findings"] == 4
    assert "script-src 'none'" in html and "default-src 'none'" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing is fetched


def test_html_is_byte_for_byte_reproducible(tmp_path):
    a, _ = page(tmp_path)
    b, _ = page(tmp_path)
    assert a == b


def test_large_blobs_are_linked_by_relative_path_and_missing_ones_said(tmp_path):
    html, _ = page(tmp_path, big_code=True)
    assert re.search(r'<a href="store/blobs/[0-9a-f]{2}/[0-9a-f]{64}\.py">code</a>', html)
    data = full_stream(tmp_path / "store")
    c = collect(read_stream(["-"], stdin=io.BytesIO(data)))
    for h in c.of("header"):
        h.store = str(tmp_path / "moved")
    html = render(c, "html", out_dir=tmp_path)
    assert "is not in the store (pass --store DIR)" in html
    assert render(c, "html", out_dir=tmp_path, store=tmp_path / "store").count("is not in the store") == 0


def test_corrupt_blob_is_not_shown(tmp_path):
    data = full_stream(tmp_path / "store")
    for p in (tmp_path / "store" / "blobs").rglob("*.png"):
        p.write_bytes(b"\x89PNG tampered")
    c = collect(read_stream(["-"], stdin=io.BytesIO(data)))
    html = render(c, "html", out_dir=tmp_path)
    assert "does not match its sha256" in html and 'src="data:image/png' not in html


def test_markdown_and_text_and_json(tmp_path):
    c = collect(read_stream(["-"], stdin=io.BytesIO(full_stream(tmp_path / "store"))))
    md = render(c, "md")
    assert "| 4 | 1 | 1 | 1 | 1 | 1 | 1 |" in md
    assert ("| &lt;script&gt;window.\\_\\_pwned=1&lt;/script&gt; | dtype | `aten.addmm.default` | 3 | `/src/m.py:12` |"
            in md)
    assert "### Crash: m.py (SIGSEGV during run)" in md and "Fatal Python error" in md
    assert md.count("- train.py\\[r1:1/2\\]: python train.py \\-\\-steps 3: compile id 1/2, forward at /src/train.py:40,") == 1
    text = render(c, "text")
    assert "  findings: 4 (dtype 3, align 1)" in text
    assert "FAIL m.py out[0]: max abs 0.5 at [3, 1]: ref 1 test nan" in text
    assert "CRASH m.py: SIGSEGV during run: killed by SIGSEGV" in text
    assert text.count(f"CAPTURED train.py[r1:1/2]: {CAPTURED_LINE}\n") == 1
    doc = msgspec.json.decode(render(c, "json"))
    assert doc["counts"]["failing_diffs"] == 1 and doc["failing_diffs"][0]["worst_test"] == "nan"
    assert doc["unknown_kinds"] == {"kernel_timeline": 1}
    (cap,) = doc["captured"]
    assert (cap["model"], cap["compile_id"], cap["mode"], cap["rank"]) == ("train.py[r1:1/2]", "1/2", "max-autotune", 1)


def test_cli_writes_atomically_and_emits_a_report_record(reportgen, tmp_path):
    src = tmp_path / "a.ndjson"
    src.write_bytes(full_stream(tmp_path / "store"))
    r = reportgen(str(src), "-o", str(src / "report.html"))  # checked before anything is read
    assert r.returncode == 2 and r.stdout == b""
    assert r.stderr.decode() == f"reportgen: error: -o {src / 'report.html'}: {src} is not a directory\n"
    out = tmp_path / "r" / "report.html"  # a directory not there yet is made
    r = reportgen(str(src), "-o", str(out))
    assert r.returncode == 0, r.stderr
    recs = [msgspec.json.decode(x) for x in r.stdout.splitlines()]
    assert [x["kind"] for x in recs] == ["header", "report"] and recs[1]["records"] == 33
    assert out.read_text().startswith("<!DOCTYPE html>") and list(out.parent.iterdir()) == [out]
    assert r.stderr.decode().count("kernel_timeline (1)") == 1


def test_garbage_among_inputs_is_one_line_exit_2_and_no_page(reportgen, tmp_path):
    good = tmp_path / "a.ndjson"
    good.write_bytes(full_stream(tmp_path / "store"))
    bad = tmp_path / "b.ndjson"
    bad.write_bytes(b"\x7fELF\x02\x01\x01\x00 binary junk\n")
    out = tmp_path / "report.html"
    previous = '<meta name="generator" content="pt2kit reportgen 1">the previous report'  # ours: replaceable
    out.write_text(previous)
    r = reportgen(str(good), str(bad), "-o", str(out))
    assert r.returncode == 2
    assert r.stderr.decode() == f"reportgen: error: {bad}:1: not JSON: JSON is malformed: invalid character (byte 0)\n"
    assert out.read_text() == previous and r.stdout == b""


def test_o_naming_an_input_is_refused_and_the_input_kept(reportgen, tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    src = d / "a.ndjson"
    src.write_bytes(full_stream(tmp_path / "store"))
    before = src.read_bytes()
    (tmp_path / "report.html").symlink_to(src)
    for args, stdin, line in [
        ((str(src), "-o", str(src)), b"", f"-o {src}: is the same file as the input {src}"),
        ((str(d), "-o", str(tmp_path / "report.html")), b"",
         f"-o {tmp_path / 'report.html'}: is the same file as the input {src} (it resolves to {src})"),
        (("--compare", str(src), str(src), "-o", str(src)), b"", f"-o {src}: is the same file as the input {src}"),
    ]:
        r = reportgen(*args, stdin=stdin)
        assert r.returncode == 2 and r.stdout == b"", r.stderr
        assert r.stderr.decode() == f"reportgen: error: {line}; writing it would overwrite an input\n"
    with src.open("rb") as stdin:  # `reportgen -o a.ndjson < a.ndjson`
        p = subprocess.run([sys.executable, "-m", "pt2kit.reportgen", "-o", str(src)], stdin=stdin,
                           capture_output=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr.decode() == (f"reportgen: error: -o {src}: is the same file as stdin's file; "
                                 "writing it would overwrite an input\n")
    assert src.read_bytes() == before and (tmp_path / "report.html").is_symlink()


def test_o_named_like_a_stream_or_no_format_is_refused_and_the_folder_stays_readable(reportgen, tmp_path):
    """`reportgen DIR -o DIR/x.ndjson` wrote the HTML page under a stream's name: every later `pt2kit ls DIR`,
    `reportgen DIR` and `gc` of the folder stopped on it. An -o whose suffix names no format is refused too."""
    d = tmp_path / "runs"
    d.mkdir()
    (d / "a.ndjson").write_bytes(full_stream(tmp_path / "store"))
    for args, line in [
        ((str(d), "-o", str(d / "x.ndjson")), f"-o {d / 'x.ndjson'}: .ndjson names a record stream, and a report is "
         "not one (pt2kit ls, reportgen and gc read a folder's .ndjson files as streams); name it .html, .htm, .json, "
         ".md, .txt"),
        ((str(d), "--format", "html", "-o", str(d / "x.jsonl")), f"-o {d / 'x.jsonl'}: .jsonl names a record stream"),
        (("--compare", str(d / "a.ndjson"), str(d / "a.ndjson"), "-o", str(d / "c.ndjson")),
         f"-o {d / 'c.ndjson'}: .ndjson names a record stream"),
        ((str(d), "-o", str(d / "r.pdf")), f"-o {d / 'r.pdf'}: reportgen writes .html, .htm, .json, .md, .txt, and "
         ".pdf names none of them; name the file so, or give --format"),
        ((str(d), "-o", str(d / "report")), f"-o {d / 'report'}: reportgen writes .html, .htm, .json, .md, .txt, "
         "and no suffix names none of them"),
        ((str(d), "--format", "html", "-o", str(d / "r.md")), f"-o {d / 'r.md'}: its suffix says md, but --format html"),
    ]:
        r = reportgen(*args)
        err = r.stderr.decode()
        assert r.returncode == 2 and r.stdout == b"" and err.count("\n") == 1, err
        assert err.startswith(f"reportgen: error: {line}"), err
    assert sorted(p.name for p in d.iterdir()) == ["a.ndjson"]  # nothing written
    ls = subprocess.run([sys.executable, "-m", "pt2kit.runtime", "ls", str(d)], capture_output=True, timeout=120)
    assert ls.returncode == 0 and ls.stdout.count(b"\n") >= 1, ls.stderr
    r = reportgen(str(d), "--format", "md", "-o", str(tmp_path / "notes"))  # no suffix, the format given: written
    assert r.returncode == 0 and (tmp_path / "notes").read_text().startswith("## pt2kit report\n"), r.stderr


def test_a_folder_holding_a_file_that_is_no_stream_stops_each_reader_with_one_line_naming_it(reportgen, tmp_path):
    """A page someone saved as x.ndjson before reportgen refused it: no reader crashes on it; each says which
    file in one line and exits 2 (gc deletes nothing on a stream it could not read)."""
    d = tmp_path / "runs"
    d.mkdir()
    (d / "a.ndjson").write_bytes(full_stream(tmp_path / "store"))
    (d / "x.ndjson").write_text("<!doctype html>\n<html></html>\n")
    (tmp_path / "store").mkdir(exist_ok=True)
    line = f"{d / 'x.ndjson'}:1: not JSON: JSON is malformed: invalid character (byte 0)\n"
    pt2kit = [sys.executable, "-m", "pt2kit.runtime"]
    for tool, p in [("pt2kit", subprocess.run([*pt2kit, "ls", str(d)], capture_output=True, timeout=120)),
                    ("pt2kit", subprocess.run([*pt2kit, "gc", "--store", str(tmp_path / "store"), "--prune", "now",
                                               str(d)], capture_output=True, timeout=120)),
                    ("reportgen", reportgen(str(d), "-o", str(tmp_path / "r.html")))]:
        assert p.returncode == 2 and p.stderr.decode() == f"{tool}: error: {line}", p.stderr
    assert not (tmp_path / "r.html").exists()


def test_stdin_and_dirs_and_formats_from_suffix(reportgen, tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    (d / "a.ndjson").write_bytes(full_stream(tmp_path / "store"))
    r = reportgen(str(d), "-o", str(tmp_path / "s.md"))
    assert (tmp_path / "s.md").read_text().startswith("## pt2kit report")
    r = reportgen("--format", "text", stdin=(d / "a.ndjson").read_bytes())
    assert r.returncode == 0 and r.stdout.decode().startswith("pt2kit report: 33 records, 6 run(s)")


def test_help_imports_neither_torch_nor_matplotlib():
    code = ("import sys\nfrom pt2kit.reportgen.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert not {'torch', 'matplotlib', 'triton', 'rich'} & set(sys.modules), sorted(sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "Exit codes:" in p.stdout


def test_rendering_never_imports_torch(tmp_path):
    code = ("import sys, io\nsys.path.insert(0, sys.argv[1])\nfrom rgtest import full_stream\n"
            "from pathlib import Path\nfrom pt2kit.reportgen import collect, render\n"
            "from pt2kit.schema import read_stream\n"
            "c = collect(read_stream(['-'], stdin=io.BytesIO(full_stream(Path(sys.argv[2])))))\n"
            "render(c, 'html'); render(c, 'md')\nassert 'torch' not in sys.modules\n")
    from pathlib import Path

    p = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(tmp_path)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr


def test_a_captured_graph_called_under_autocast_says_so_in_its_line():
    from pt2kit.reportgen.collection import captured_line
    from pt2kit.schema import Autocast, BlobRef, Captured, Model

    code = BlobRef(path="blobs/ab/" + "ab" * 32 + ".py", sha256="ab" * 32, size=1, media_type="text/x-python")
    m = Model(v=1, run="r", model="amp.py[0/0]", file="/m.py", autocast=[Autocast(device_type="cuda", dtype="bfloat16")],
              captured=Captured(command=["python", "amp.py"], compile_id="0/0", code=code, backend="inductor", grad=True,
                                values="small"))
    assert captured_line(m) == ("python amp.py: compile id 0/0, inductor, grad, under torch.autocast(cuda, bfloat16), "
                                "values small")
