"""`pt2kit cat`, `ls` and `gc` on streams that are not what they should be: cut, endless, oversized or
mutated. Each ends with exit 0, 1 or 2 (never 3), in bounded memory, and gc deletes nothing unless
it read every stream to its end."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_catalog import _run

from pt2kit.schema import Graph, Store

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "schemas" / "tests"))
from mutate import HOSTILE_CAP, feed, hostile_stream

PT2KIT = [sys.executable, "-m", "pt2kit.runtime"]
SMALL = dict(os.environ, PT2KIT_LINE_CAP=str(HOSTILE_CAP))
BOUND = 96 << 20  # peak RSS: the interpreter and its imports take ~27 MiB here


def _old_store(root: Path) -> tuple[Store, Path, list[Path]]:
    """A store with two blobs older than gc's grace period, and a stream referencing the first."""
    store = Store(root / "store")
    refs = [store.put_text(t) for t in ("kept", "unreferenced")]
    blobs = [store.root / r.path for r in refs]
    for b in blobs:
        os.utime(b, (time.time() - 30 * 86400,) * 2)
    _run(root / "s.ndjson", "r1", "fxcheck", (Graph, {"phase": "dynamo", "code": refs[0]}))
    return store, root / "s.ndjson", blobs


def test_cat_on_dev_zero_stops_at_the_default_cap_in_bounded_memory():
    code, err, rss = feed([*PT2KIT, "cat", "/dev/zero"], b"", False, env=dict(os.environ), address_space=2 << 30)
    assert code == 2 and err == ("pt2kit: error: /dev/zero:1: line longer than 256 MiB, the cap on a record's line "
                                 "($PT2KIT_LINE_CAP sets it): is this a stream?\n")
    assert rss < 800 << 20  # the cap's pieces and the interpreter: it grew to 24 GB


@pytest.mark.parametrize("cmd", ["ls", "gc"])
def test_ls_and_gc_stop_at_an_overlong_line_naming_it_and_gc_deletes_nothing(tmp_path, cmd):
    store, stream, blobs = _old_store(tmp_path)
    with open(stream, "ab") as f:
        f.write(b'{"kind":"graph","v":1,"run":"r","x":"' + b"x" * HOSTILE_CAP + b'"}\n')
    args = ["gc", "--store", str(store.root), "--prune", "now", str(stream)] if cmd == "gc" else ["ls", str(stream)]
    code, err, _ = feed([*PT2KIT, *args], b"", False, env=SMALL)
    assert code == 2 and err == (f"pt2kit: error: {stream}:3: line longer than 64 KiB, the cap on a record's line "
                                 "($PT2KIT_LINE_CAP sets it): is this a stream?\n")
    assert all(b.exists() for b in blobs)


def test_gc_on_a_record_whose_string_is_not_utf8_is_one_line_and_deletes_nothing(tmp_path):
    """What the hostile-stream test below once drew: a header whose tool_version holds the byte 0x80."""
    store, saved, blobs = _old_store(tmp_path)
    bad = saved.read_bytes().replace(b'"tool_version":"', b'"tool_version":"\x80', 1)
    assert bad != saved.read_bytes()
    code, err, _ = feed([*PT2KIT, "gc", "--store", str(store.root), "--prune", "now", "-"], bad, False, env=SMALL)
    assert (code, err) == (2, "pt2kit: error: <stdin>:1: invalid UTF-8 at byte 0 of the line\n")
    assert all(b.exists() for b in blobs)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(st.sampled_from(["cat", "cat --envelope", "ls", "gc"]), hostile_stream())
def test_every_reader_on_hostile_streams_ends_0_1_or_2_in_bounded_memory(cmd, stream):
    data, endless = stream
    with tempfile.TemporaryDirectory() as tmp:
        store, saved, blobs = _old_store(Path(tmp))
        args = ["gc", "--store", str(store.root), "--prune", "now", str(saved), "-"] if cmd == "gc" else \
            [*cmd.split(), "-"]
        code, err, rss = feed([*PT2KIT, *args], data, endless, env=SMALL, address_space=1 << 30)
        assert code in (0, 1, 2) and "internal error" not in err and "Traceback" not in err, err
        assert rss < BOUND, f"{cmd}: peak RSS {rss >> 20} MiB"
        if code == 2:
            assert err.count("\n") == 1, err
        if cmd == "gc":  # the blob the saved stream names stays; the other goes only after a full read
            assert blobs[0].exists() and blobs[1].exists() == (code != 0)
