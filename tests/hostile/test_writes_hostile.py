"""Issue 55's file-writing findings, kept as the attacks they were: pt2kit reads what users have and writes only
where they asked, never over a file it did not write in this run. Each refusal is one line on stderr naming
the path and why, exit 2, and nothing already written is lost. No torch.compile runs: streams are written by
hand, and triage's two runs are of scripts that import no torch (a run each, shared by several asserts)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from pt2kit.schema import Captured, Diff, Header, Model
from pt2kit.testkit import module, run

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "packages" / "minify" / "tests" / "models" / "small.py"
TRIAGE, MINIFY, REPORTGEN, CAPTURE = (module(f"pt2kit.{t}") for t in ("triage", "minify", "reportgen", "capture"))
KEEP = "pt2kit writes over no file of yours: remove it, or name another path"
NOT_OURS = f"exists and is not pt2kit's output (it carries no pt2kit marker); {KEEP}"
MINE = {"report.html": "my page\n", "repro.py": "print('my repro')\n", "bug-report.md": "# my notes\n",
        "kdiff.ndjson": "my own lines\n"}
EARLIER_REPRO = '#!/usr/bin/env python3\n"""A standalone repro made by pt2kit minify 0.10.10 on torch 2.13.\n'

pytestmark = pytest.mark.xdist_group("hostile-writes")


# -- triage (finding 3, and 6's dangling triage-1 and removed folder) ------------------------------------------

@pytest.fixture(scope="module")
def script_writes_triages_names(tmp_path_factory):
    """`pt2kit triage --out . -- python script.py` in an empty folder, the script writing there the names
    triage writes (its page, repro, bug report and a step's stream)."""
    cwd, lib = tmp_path_factory.mktemp("empty"), tmp_path_factory.mktemp("lib")
    (lib / "script.py").write_text(f"for name, text in {MINE!r}.items():\n    open(name, 'w').write(text)\n")
    return cwd, run([*TRIAGE, "--out", ".", "--", sys.executable, str(lib / "script.py")], cwd=cwd, timeout=300)


def test_triage_never_replaces_what_the_script_wrote_in_its_folder(script_writes_triages_names):
    cwd, r = script_writes_triages_names
    assert r.code == 2, r.stderr
    assert r.stderr.splitlines()[-1] == (
        "triage: error: kdiff.ndjson: the script made it in triage's folder while it ran, and triage writes over no "
        "file it did not write: it stops here, what was written stays in . (give triage a folder of its own: "
        "another --out)")
    for name, text in MINE.items():
        assert (cwd / name).read_text() == text, name


def test_triage_keeps_what_it_wrote_before_it_stopped(script_writes_triages_names):
    cwd, r = script_writes_triages_names
    first = msgspec.json.decode((cwd / "capture.ndjson").read_bytes().splitlines()[0])
    assert (first["kind"], first["tool"]) == ("header", "capture")
    assert not (cwd / "reportgen.ndjson").exists() and "File exists" not in r.stderr and "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def script_removes_the_folder(tmp_path_factory):
    """A dangling ``triage-1`` link in the cwd, and a script that removes the folder triage made."""
    cwd = tmp_path_factory.mktemp("cwd")
    (cwd / "triage-1").symlink_to(cwd / "elsewhere" / "t")
    (cwd / "elsewhere").mkdir()
    code = "import shutil; shutil.rmtree('triage-2')"
    return cwd, run([*TRIAGE, "--", sys.executable, "-c", code], cwd=cwd, timeout=300)


def test_a_dangling_triage_1_is_skipped_never_written_through(script_removes_the_folder):
    cwd, r = script_removes_the_folder
    assert "triage: [1] capture: pt2kit capture --store triage-2/store --out triage-2/capture.ndjson" in r.stderr
    assert list((cwd / "elsewhere").iterdir()) == [] and (cwd / "triage-1").is_symlink()


def test_a_script_that_removes_triages_folder_is_said_so(script_removes_the_folder):
    _, r = script_removes_the_folder
    assert r.code == 2
    assert r.stderr.splitlines()[-1] == "triage: error: the script removed triage's folder triage-2 while it ran"


def test_triage_refuses_a_loop_a_dangling_out_and_its_own_stderr_before_anything_runs(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    marker = tmp_path / "RAN"
    cmd = ["--", sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    for out, line in (
        ("loop", "--out loop: is a loop of symbolic links (too many levels); give a new folder"),
        ("dangling", f"--out dangling: is a symbolic link to {tmp_path / 'nowhere'}, which does not exist; triage "
                     "makes no folder through a link (give a new folder)"),
    ):
        r = run([*TRIAGE, "--out", out, *cmd], cwd=tmp_path, timeout=60)
        assert (r.code, r.stderr) == (2, f"triage: error: {line}\n"), out
    # `--out X 2> X`: the shell made X for triage's stderr; `--out D 2> D/err`: stderr inside the folder
    (tmp_path / "D").mkdir()
    for out, err, line in (
        ("X", tmp_path / "X", "--out X: is the file stderr goes to (2> X); triage's folder cannot be it: send stderr "
                              "elsewhere, or give another --out"),
        ("D", tmp_path / "D" / "err", f"--out D: stderr goes to a file inside it ({tmp_path / 'D' / 'err'}); "
                                      "triage's folder must be its own: send stderr elsewhere, or give another --out"),
    ):
        with open(err, "w") as f:
            p = subprocess.run([*TRIAGE, "--out", out, *cmd], cwd=tmp_path, stdout=subprocess.PIPE, stderr=f,
                               stdin=subprocess.DEVNULL, timeout=60)
        assert (p.returncode, err.read_text()) == (2, f"triage: error: {line}\n"), out
    assert not marker.exists() and (tmp_path / "X").is_file() and not (tmp_path / "nowhere").exists()


# -- minify (finding 5, and 6's -o and repro-N.py over files that are not ours) ---------------------------------

def _stream(model_file: Path, script: Path, entries: tuple[str, ...] = ("clean",)) -> bytes:
    """A capture-made stream by hand: each model a graph of ``script`` (captured.command names it), each failing."""
    common = dict(tool_version="1", argv=["kdiff"], time="t", host="h", python="3", store="s")
    code = {"path": "blobs/x.py", "sha256": "0" * 64, "size": 1, "media_type": "text/x-python"}
    lines: list = [Header(v=1, run="a", tool="kdiff", **common)]
    for e in entries:
        cap = Captured(command=["python", str(script)], compile_id="0/0", code=code, source=f"{script}:3",
                       backend_code=f"{script.parent / 'be.py'}:wrongbk")
        lines += [Model(v=1, run="a", model=f"ck.py:{e}", file=str(model_file), entry=e, captured=cap),
                  Diff(v=1, run="a", model=f"ck.py:{e}", output="out[0]", ref="eager", test="inductor",
                       dtype="float32", shape=[2], atol=0.0, rtol=0.0, passed=False)]
    return b"".join(msgspec.json.encode(x) + b"\n" for x in lines)


@pytest.fixture
def captured_script(tmp_path):
    """ck.py (the user's script, the stream's captured command), be.py (its backend), a model file."""
    (tmp_path / "ck.py").write_text("print('my training script')\n")
    (tmp_path / "be.py").write_text("def mybk(gm, inputs):\n    return gm\n")
    shutil.copy(SMALL, tmp_path / "m.py")
    return tmp_path


def test_minify_o_never_replaces_the_captured_script(captured_script):
    d = captured_script
    r = run([*MINIFY, "--backend", "be.py:wrongbk", "-o", "ck.py", "--store", "s"], cwd=d,
            stdin=_stream(d / "m.py", d / "ck.py"), timeout=300)
    assert (r.code, r.stdout) == (2, b"")
    assert r.stderr == f"minify: error: -o ck.py: {NOT_OURS}\n"
    assert (d / "ck.py").read_text() == "print('my training script')\n"


def test_minify_o_over_an_earlier_repro_that_is_the_captured_script_is_refused_as_an_input(captured_script):
    """`pt2kit capture -- python repro.py | kdiff | minify -o repro.py`: the repro carries pt2kit's marker, yet
    the stream names it as the script it ran: an input."""
    d = captured_script
    (d / "ck.py").write_text(EARLIER_REPRO)
    r = run([*MINIFY, "-o", "ck.py", "--store", "s"], cwd=d, stdin=_stream(d / "m.py", d / "ck.py"), timeout=300)
    assert r.code == 2, r.stderr
    assert r.stderr.splitlines()[-1] == (f"minify: error: -o ck.py: is the same file as the captured command's "
                                         f"argument {d / 'ck.py'}; writing it would overwrite an input")
    assert (d / "ck.py").read_text() == EARLIER_REPRO and "running model file" not in r.stderr


def test_minify_repro_n_over_a_users_file_is_refused_before_anything_runs(captured_script):
    d = captured_script
    (d / "repro-2.py").write_text("my own second repro\n")
    r = run([*MINIFY, "-o", "repro.py", "--store", "s"], cwd=d,
            stdin=_stream(d / "m.py", d / "ck.py", ("clean", "posnet")), timeout=300)
    assert r.code == 2, r.stderr
    assert r.stderr.splitlines()[-1] == f"minify: error: -o repro-2.py: {NOT_OURS}"
    assert (d / "repro-2.py").read_text() == "my own second repro\n" and not (d / "repro-1.py").exists()
    assert "running model file" not in r.stderr


# -- reportgen and capture (finding 6: -o over a file not ours, links that dangle or loop) --------------------

def test_reportgen_o_never_replaces_a_users_file_nor_writes_through_a_bad_link(tmp_path):
    stream = str(ROOT / "tests" / "streams" / "demo.ndjson")
    (tmp_path / "notes.md").write_text("# my notes\n")
    (tmp_path / "loop.html").symlink_to(tmp_path / "loop.html")
    (tmp_path / "gone.html").symlink_to(tmp_path / "away" / "page.html")
    for out, line in (
        ("notes.md", f"-o notes.md: {NOT_OURS}"),
        ("loop.html", "-o loop.html: is a loop of symbolic links (too many levels); name another path"),
        ("gone.html", f"-o gone.html: is a symbolic link to {tmp_path / 'away' / 'page.html'}, which does not exist; "
                      "pt2kit makes no file through a link: name the file itself, or another path"),
    ):
        r = run([*REPORTGEN, stream, "-o", out], cwd=tmp_path, timeout=60)
        assert (r.code, r.stdout, r.stderr) == (2, b"", f"reportgen: error: {line}\n"), out
    assert (tmp_path / "notes.md").read_text() == "# my notes\n" and not (tmp_path / "away").exists()
    r = run([*REPORTGEN, stream, "-o", "notes.md"], cwd=tmp_path, timeout=60)  # still refused: no page of ours
    assert r.code == 2
    (tmp_path / "notes.md").unlink()
    assert run([*REPORTGEN, stream, "-o", "notes.md"], cwd=tmp_path, timeout=60).code == 0
    # its own earlier page (pt2kit's marker) is what the same -o replaces
    assert run([*REPORTGEN, stream, "-o", "notes.md", "--title", "again"], cwd=tmp_path, timeout=60).code == 0


def test_capture_never_replaces_the_file_the_script_made_at_its_out(tmp_path):
    code = "open('o.ndjson', 'w').write('the script made this')"
    r = run([*CAPTURE, "--store", "s", "--out", "o.ndjson", "--", sys.executable, "-c", code], cwd=tmp_path,
            timeout=120)
    assert r.code == 0, r.stderr  # the script's: the records are kept, not lost
    kept = next((tmp_path / "s").glob("capture-*.ndjson"))
    assert r.stderr.splitlines()[-1] == (
        "capture: --out o.ndjson: was made by someone else while this run worked (it was not there when the run "
        f"began); {KEEP}; the records are kept in {kept}")
    assert (tmp_path / "o.ndjson").read_text() == "the script made this"
    assert msgspec.json.decode(kept.read_bytes().splitlines()[0])["kind"] == "header"
