"""pt2kit.capture.Records without torch: a stream's records, a repro's code shown as Python, the plain table
where reportgen is missing, and a tool's refusal as data (its exit code and stderr), never an exception."""

from __future__ import annotations

import sys

from pt2kit.capture import Records
from pt2kit.schema import Header, Repro, Store, encode

CODE = 'doc = """\n```\n"""  # a line that would close a fence of three\nprint(doc)\n'


def _stream(store: Store) -> bytes:
    ref = store.put(CODE.encode(), "text/x-python", ".py")
    recs = [Header(v=1, run="r", tool="minify", tool_version="0", argv=["minify"], time="t", host="h", python="3",
                   store=str(store.root), schema="1"),
            Repro(v=1, run="r", model="nb.py[0/0]", path=ref, failure="accuracy", nodes_before=4, nodes_after=1,
                  reproduces=True),
            b'{"kind":"from_a_newer_tool","v":1,"run":"r"}']
    return b"".join((r if isinstance(r, bytes) else encode(r)) + b"\n" for r in recs)


def test_a_repros_code_shows_as_python_and_an_unknown_kind_stays_a_dict(tmp_path):
    store = Store(tmp_path)
    got = Records(_stream(store), tmp_path)
    assert [type(r).__name__ for r in got] == ["Header", "Repro", "dict"] and got[2]["kind"] == "from_a_newer_tool"
    (code,) = got.repros
    assert code == CODE
    assert code._repr_markdown_() == f"````python\n{CODE}\n````"  # a fence longer than any in the code


def test_without_reportgen_the_records_show_as_a_table(tmp_path, monkeypatch):
    got = Records(_stream(Store(tmp_path)), tmp_path)
    monkeypatch.setitem(sys.modules, "pt2kit.reportgen", None)  # import fails: not installed
    table = got.html()
    assert table.startswith("<table>") and "<td>repro</td><td>nb.py[0/0]</td><td>accuracy</td>" in table
    assert "<td>from_a_newer_tool</td>" in table


def test_a_tool_that_refuses_is_an_exit_code_and_its_stderr(tmp_path, capsys):
    got = Records(_stream(Store(tmp_path)), tmp_path).kdiff("--no-such-flag")
    assert (got.exit_code, list(got)) == (2, [])
    assert "--no-such-flag" in got.stderr and got.stderr in capsys.readouterr().err  # shown as it came


def test_triage_of_a_block_that_compiled_nothing_takes_a_fresh_folder_and_shows_its_report(tmp_path, monkeypatch):
    # a block captured in process whose records hold no graph: triage runs reportgen alone (no torch in a step)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "triage-1").mkdir()  # taken: triage's fresh folder is triage-2, and the result names it
    header = Header(v=1, run="r", tool="capture", tool_version="0.19.0", argv=["capture", "(in process)"], time="t",
                    host="h", python="3", store=str(tmp_path / "store"), schema="1")
    got = Records(encode(header) + b"\n", tmp_path / "store").triage()
    assert (got.exit_code, got.folder, got.repro) == (0, tmp_path / "triage-2", None), got.stderr
    report = got._repr_markdown_()
    assert report == (tmp_path / "triage-2" / "bug-report.md").read_text()
    assert report.startswith("# pt2kit triage: no failure found\n")
    assert "A block of code captured in process under `torch.compile`" in report
    assert (tmp_path / "triage-2" / "capture.ndjson").read_bytes() == encode(header) + b"\n"
