from __future__ import annotations

import io

import pytest
from mutate import Endless

from pt2kit.schema import Graph, StreamError, Violation, read_stream
from pt2kit.schema.stream import NewerSchemaError, RecordWriter

HEADER = (b'{"kind":"header","v":1,"run":"a","tool":"fxcheck","tool_version":"1.0","argv":[],'
          b'"time":"2026-11-21T00:00:00Z","host":"h","python":"3.11","store":"/s"}\n')
GRAPH = b'{"kind":"graph","v":1,"run":"a","phase":"dynamo","nodes":3}\n'
FUTURE = b'{"kind":"kernel_timeline","v":1,"run":"a","spans":[1,2,3],"x":{"y":null}}\n'


def run(data: bytes, **kw):
    fwd = io.BytesIO()
    out = []
    try:
        for line in read_stream(["-"], stdin=io.BytesIO(data), forward=fwd, **kw):
            out.append(line)
    except StreamError as e:
        return out, fwd.getvalue(), e
    return out, fwd.getvalue(), None


def test_unknown_kinds_are_forwarded_byte_for_byte():
    data = HEADER + FUTURE + GRAPH
    lines, fwd, err = run(data)
    assert err is None
    assert fwd == data
    assert [line.kind for line in lines] == ["header", "kernel_timeline", "graph"]
    assert lines[1].record is None and not lines[1].known
    assert isinstance(lines[2].record, Graph) and lines[2].record.nodes == 3


def test_only_wanted_kinds_are_decoded():
    lines, _, err = run(HEADER + GRAPH, want=[Violation])
    assert err is None and all(line.record is None for line in lines)
    lines, _, _ = run(HEADER + GRAPH, want=["graph"])
    assert lines[0].record is None and lines[1].record.phase == "dynamo"


def test_invalid_record_names_line_and_field_path_and_keeps_earlier_lines():
    bad = b'{"kind":"graph","v":1,"run":"a","phase":"dynamo","ops":{"aten.add":"two"}}\n'
    lines, fwd, err = run(HEADER + GRAPH + bad + GRAPH)
    assert str(err) == "<stdin>:3: invalid `graph` record: Expected `int`, got `str` - at `$.ops[...]`"
    assert fwd == HEADER + GRAPH and len(lines) == 2


def test_newer_major_is_refused_with_both_versions_and_the_upgrade():
    _lines, fwd, err = run(HEADER + b'{"kind":"graph","v":2,"run":"b","phase":"x"}\n')
    assert isinstance(err, NewerSchemaError)
    assert str(err) == ("<stdin>:2: record of schema v2, but this pt2kit-schema reads v1; "
                        "upgrade with: pip install -U 'pt2kit-schema>=2.0' (and the pt2kit tools)")
    assert "\n" not in str(err) and fwd == HEADER


def test_truncated_last_line():
    _, fwd, err = run(HEADER + GRAPH[:25])
    assert str(err) == "<stdin>:2: truncated line (was the writer killed mid-line?)"
    assert fwd == HEADER


def test_last_line_without_newline_but_complete_is_fine():
    lines, fwd, err = run(HEADER + GRAPH.rstrip(b"\n"))
    assert err is None and len(lines) == 2 and fwd == HEADER + GRAPH


@pytest.mark.parametrize(
    "data,expected",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "<stdin>:1: not JSON: JSON is malformed"),
        (b"[1, 2]\n", "<stdin>:1: not a pt2kit record: Expected `object`, got `array`"),
        (b'{"kind":"graph","run":"a"}\n', "<stdin>:1: not a pt2kit record: Object missing required field `v`"),
        (b'{"v":1,"run":"a"}\n', "<stdin>:1: not a pt2kit record: Object missing required field `kind`"),
    ],
)
def test_garbage_gets_one_line(data, expected):
    _, _, err = run(data)
    assert str(err).startswith(expected)
    assert "\n" not in str(err)


def test_blank_lines_are_skipped_and_line_numbers_stay_true(tmp_path):
    f = tmp_path / "a.ndjson"
    f.write_bytes(HEADER + b"\n   \n" + b'{"kind":"graph"}\n')
    with pytest.raises(StreamError, match=rf"^{f}:4: not a pt2kit record"):
        list(read_stream([f]))


def test_directories_and_concatenated_runs(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.ndjson").write_bytes(GRAPH)
    (tmp_path / "sub" / "a.jsonl").write_bytes(HEADER)
    (tmp_path / "notes.txt").write_text("ignored")
    lines = list(read_stream([tmp_path]))
    assert [line.kind for line in lines] == ["graph", "header"]
    with pytest.raises(StreamError, match="no such file"):
        list(read_stream([tmp_path / "missing.ndjson"]))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(StreamError, match="holds no"):
        list(read_stream([empty]))


def test_writer_stamps_run_and_version_and_flushes_each_record():
    class Counting(io.BytesIO):
        flushes = 0

        def flush(self):
            self.flushes += 1

    out = Counting()
    w = RecordWriter(out, run="r9")
    w.emit_new(Graph, phase="forward", nodes=2)
    w.forward(b'{"kind":"x","v":1,"run":"o"}')
    assert out.getvalue() == (b'{"kind":"graph","v":1,"run":"r9","phase":"forward","nodes":2}\n'
                              b'{"kind":"x","v":1,"run":"o"}\n')
    assert out.flushes == 1 and w.count == 1


def test_run_ids_are_unique_and_sortable():
    from pt2kit.schema.stream import new_run_id

    ids = {new_run_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == len("20261121T000000Z-") + 12 for i in ids)


def _record(size: int) -> bytes:
    """A record of an unknown kind, exactly ``size`` bytes without its newline."""
    head, tail = b'{"kind":"blob_dump","v":1,"run":"a","x":"', b'"}'
    return head + b"y" * (size - len(head) - len(tail)) + tail


def test_an_endless_line_stops_at_its_file_line_having_read_about_the_cap(monkeypatch):
    monkeypatch.setenv("PT2KIT_LINE_CAP", "1M")
    src = Endless(HEADER + GRAPH)
    fwd, seen = io.BytesIO(), []
    with pytest.raises(StreamError) as e:
        for line in read_stream(["-"], stdin=io.BufferedReader(src), forward=fwd):
            seen.append(line.kind)
    assert str(e.value) == ("<stdin>:3: line longer than 1 MiB, the cap on a record's line ($PT2KIT_LINE_CAP "
                            "sets it): is this a stream?")
    assert seen == ["header", "graph"] and fwd.getvalue() == HEADER + GRAPH
    assert (1 << 20) < src.taken <= (1 << 20) + 3 * (1 << 16)  # the cap, and what one read or two more brought
    lines, fwd, err = run(HEADER + b"\n\n" + _record(3 << 20) + b"\n" + GRAPH)
    assert str(err).startswith("<stdin>:4: line longer than 1 MiB") and fwd == HEADER + b"\n\n" and len(lines) == 1


@pytest.mark.parametrize("cap", [1000, 200_000])  # below one read, and over several
@pytest.mark.parametrize("end", [b"\n", b""])
def test_a_line_of_exactly_the_cap_reads_and_one_byte_more_is_refused(monkeypatch, cap, end):
    monkeypatch.setenv("PT2KIT_LINE_CAP", str(cap))
    lines, fwd, err = run(HEADER + _record(cap) + end)
    assert err is None and [ln.kind for ln in lines] == ["header", "blob_dump"] and fwd == HEADER + _record(cap) + b"\n"
    lines, fwd, err = run(HEADER + _record(cap + 1) + end)
    assert str(err).startswith(f"<stdin>:2: line longer than {cap} bytes,") and fwd == HEADER


def test_a_20mb_record_reads_whole_under_the_default_cap():
    big = _record(20_000_000) + b"\n"
    lines, fwd, err = run(HEADER + big + GRAPH)
    assert err is None and [len(ln.raw) for ln in lines] == [len(HEADER) - 1, len(big) - 1, len(GRAPH) - 1]
    assert fwd == HEADER + big + GRAPH


def test_a_file_with_no_newline_is_refused_at_line_one(monkeypatch):
    monkeypatch.setenv("PT2KIT_LINE_CAP", "64K")
    with pytest.raises(StreamError, match=r"^/dev/zero:1: line longer than 64 KiB, "):
        list(read_stream(["/dev/zero"]))


@pytest.mark.parametrize("value", ["0", "-5", "lots", "1T", "1.5G", "99999999999999999"])
def test_a_bad_line_cap_setting_is_one_line(monkeypatch, value):
    monkeypatch.setenv("PT2KIT_LINE_CAP", value)
    _, _, err = run(HEADER)
    assert str(err) == f"PT2KIT_LINE_CAP={value!r}: expected a size in bytes > 0, e.g. 268435456, 512M or 1G"


def test_plumbing_left_the_top_level_but_an_older_runtime_still_finds_it_with_a_warning():
    import warnings

    import pt2kit.schema as schema
    from pt2kit.schema.store import sweep_temp_files

    assert "sweep_temp_files" not in schema.__all__ and "RecordWriter" not in schema.__all__
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert schema.sweep_temp_files is sweep_temp_files  # what pt2kit-runtime 1.5 imports
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "pt2kit.schema.store" in str(caught[0].message)
    with pytest.raises(AttributeError):
        schema.no_such_name  # noqa: B018
