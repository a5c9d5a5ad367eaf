"""reportgen on hostile streams: it reads only the store, escapes every field in every format, and
ends with exit 0 or a one-line exit 2, never an internal error."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pt2kit.reportgen import collect, render
from pt2kit.schema import read_stream

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "schemas" / "tests"))
from mutate import mutated_stream
from rgtest import cli

SECRET = b"root:x:0:0:the secret line\n"


def _header(store: Path | str) -> dict:
    return {"kind": "header", "v": 1, "run": "r", "tool": "fxcheck", "tool_version": "1", "argv": [], "time": "t",
            "host": "h", "python": "3", "store": str(store)}


def _graph(ref: dict) -> dict:
    return {"kind": "graph", "v": 1, "run": "r", "model": "m", "phase": "forward", "nodes": 1, "ops": {}, "code": ref}


def _ref(path: str, data: bytes) -> dict:
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "media_type": "text/plain"}


def _blob_path(data: bytes, ext: str = ".txt") -> str:
    sha = hashlib.sha256(data).hexdigest()
    return f"blobs/{sha[:2]}/{sha}{ext}"


def _page(tmp_path: Path, records: list[dict], store: Path) -> str:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    c = collect(read_stream(["-"], stdin=io.BytesIO(data)))
    return render(c, "html", out_dir=tmp_path, store=store)


def test_blobs_outside_the_store_are_refused_never_read_linked_or_probed(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_bytes(SECRET)
    store = tmp_path / "store"
    (store / "blobs").mkdir(parents=True)
    # a symlink inside the store, in the exact form of a blob, leading out of it
    link = store / _blob_path(SECRET)
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    # a device and a FIFO in blob form (reading them would exhaust memory or hang)
    empty = b""
    dev = store / _blob_path(empty)
    dev.parent.mkdir(parents=True, exist_ok=True)
    dev.symlink_to("/dev/zero")
    fifo_data = b"0123456789"
    fifo = store / _blob_path(fifo_data)
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    refs = [
        _ref(str(outside), SECRET),                                  # absolute
        _ref("../secret.txt", SECRET),                               # ..
        _ref("blobs/../../secret.txt", SECRET),
        _ref(_blob_path(SECRET), SECRET),                            # symlink out
        _ref(_blob_path(empty), empty),                              # /dev/zero
        _ref(_blob_path(fifo_data), fifo_data),                      # FIFO
        _ref("javascript:alert(1)", SECRET),
        _ref("blobs/zz/" + "0" * 64 + ".txt", SECRET),               # not its own sha256
    ]
    for header_store in (store, "/", str(tmp_path)):
        html = _page(tmp_path, [_header(header_store), *map(_graph, refs)], store)
        assert "the secret line" not in html and "secret.txt" not in html
        assert "javascript:" not in html and "/dev/zero" not in html
        assert html.count("refused") >= len(refs)
        assert "is not in the store" not in html  # a refusal never says whether the target exists
        hrefs = [h for h in re.findall(r'href="([^"]*)"', html) if not h.startswith("#")]
        assert hrefs == []


def test_a_blob_in_the_store_is_still_shown(tmp_path):
    from pt2kit.schema import Store

    store = tmp_path / "store"
    ref = Store(store).put_text("def forward(x): return x\n", "text/x-python", ".py")
    html = _page(tmp_path, [_header(store), _graph({"path": ref.path, "sha256": ref.sha256, "size": ref.size,
                                                     "media_type": ref.media_type})], store)
    assert "def forward(x): return x" in html


def test_markdown_escapes_every_field(tmp_path):
    evil = "a|b`c`*d*[x](javascript:alert(1))<img src=x>_e_\n# h"
    recs = [
        {**_header(tmp_path), "tool": evil, "tool_version": evil, "torch": evil, "device": evil},
        {"kind": "violation", "v": 1, "run": "r", "constraint": evil, "message": evil, "op": evil, "source": evil, "phase": "forward",
         "model": evil},
        {"kind": "crash", "v": 1, "run": "r", "stage": evil, "signal": evil, "exception": evil, "message": evil,
         "model": evil, "stderr_tail": "```\n<script>x</script>\n````"},
        {"kind": "error", "v": 1, "run": "r", "message": evil, "exit_code": 2},
    ]
    c = collect(read_stream(["-"], stdin=io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in recs))))
    md = render(c, "md")
    body = md.split("\n```", 1)[0]  # everything before the stderr fence
    # outside code spans (whose text CommonMark never reads as markup) nothing is markup
    prose = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", body.replace("\\`", ""))
    assert "`" not in prose
    assert "<img" not in prose and "<script" not in prose
    assert "[x](javascript" not in prose and "](" not in prose.replace("\\](", "")
    assert "\n# h" not in md
    for line in body.splitlines():
        if line.startswith("| ") and "---" not in line:
            # every | inside a cell is escaped: the row keeps its column count
            assert len([p for p in line.replace("\\|", "").split("|")]) in (7, 8, 9)
    # the stderr tail sits in one fence that nothing inside can close
    fence_lines = [ln for ln in md.splitlines() if ln.startswith("```")]
    assert fence_lines[0] == fence_lines[-1] == "`````"


def test_dollar_signs_in_plotted_labels_are_drawn_as_text(tmp_path):
    recs = [_header(tmp_path)] + [
        {"kind": "violation", "v": 1, "run": "r", "constraint": c, "message": "m", "phase": "forward"} for c in ("$x^$", "$\\frac{$", "ok")
    ] + [{"kind": "bench", "v": 1, "run": "r", "backend": "$\\bad{", "model": "$m$",
          "latency": {"n": 1, "mean": 1.0, "median": 1.0, "min": 1.0, "max": 1.0}}]
    src = tmp_path / "s.ndjson"
    src.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in recs))
    code, err = cli([str(src), "-o", str(tmp_path / "r.html")])
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "$x^$" in html and "$\\frac{$" in html


@pytest.mark.parametrize("data", [
    b'{"kind":"error","v":1,"run":"r","message":"a\xffb","exit_code":2}\n',
    b'{"kind":"kernel","v":1,"run":"r","name":"k","launch":0,"args":[{"name":"a","stats":{"numel":1,"mean":"abc"}}]}\n',
    b'{"kind":"foo\xff","v":1,"run":"r"}\n',
])
def test_bad_data_is_file_line_exit_2(tmp_path, data):
    src = tmp_path / "s.ndjson"
    src.write_bytes(data)
    for fmt in ("html", "md", "text", "json"):
        code, err = cli([str(src), "--format", fmt, "-o", str(tmp_path / f"r.{fmt}")])
        assert code == 2 and err.count("\n") == 1 and err.startswith(f"reportgen: error: {src}:1: "), err


def test_an_output_name_too_long_is_exit_2(tmp_path):
    src = tmp_path / "s.ndjson"
    src.write_bytes(json.dumps(_header(tmp_path)).encode() + b"\n")
    code, err = cli([str(src), "-o", str(tmp_path / ("x" * 300 + ".html"))])
    assert code == 2 and err.count("\n") == 1 and "File name too long" in err


def test_terminal_escapes_from_a_stream_are_shown_not_obeyed(tmp_path):
    src = tmp_path / "s.ndjson"
    src.write_bytes(json.dumps({"kind": "error", "v": 1, "run": "r", "message": "\x1b]0;owned\x07\x1b[2J",
                                "exit_code": 2}).encode() + b"\n" + b'{"kind":"x\\u001b[31m","v":1,"run":"r"}\n')
    code, err = cli([str(src), "--format", "text", "-o", str(tmp_path / "r.txt")])
    assert code == 0
    assert "\x1b" not in err and "\\x1b[31m" in err
    text = (tmp_path / "r.txt").read_text()
    assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;owned\\x07" in text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_stream(), st.sampled_from(["html", "md", "text", "json"]))
def test_fuzz_every_format_over_mutated_real_streams(tmp_path, data, fmt):
    src = tmp_path / "s.ndjson"
    src.write_bytes(data)
    code, err = cli([str(src), "--format", fmt, "-o", str(tmp_path / "out"), "--quiet"])
    assert code in (0, 2), err
    assert "internal error" not in err and "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1 and "\x1b" not in err
