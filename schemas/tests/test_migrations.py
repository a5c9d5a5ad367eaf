"""The pattern for a migration test: register the step, feed an old line, get a current record.

When major 2 ships, copy this test with a real v1 line and the real MIGRATIONS[1].
"""

from __future__ import annotations

import io

import pytest

from pt2kit.schema import Graph, StreamError, migrations, read_stream


def test_old_major_is_upgraded_and_forwarded_unchanged(monkeypatch):
    def v0_to_v1(obj):
        obj["nodes"] = obj.pop("node_count")  # pretend v0 called the field node_count
        return obj

    monkeypatch.setitem(migrations.MIGRATIONS, 0, v0_to_v1)
    old = b'{"kind":"graph","v":0,"run":"old","phase":"dynamo","node_count":7}\n'
    fwd = io.BytesIO()
    (line,) = list(read_stream(["-"], stdin=io.BytesIO(old), forward=fwd))
    assert line.record == Graph(v=1, run="old", phase="dynamo", nodes=7)
    assert fwd.getvalue() == old


def test_major_older_than_any_migration_is_refused():
    with pytest.raises(StreamError, match=r"^<stdin>:1: record of schema v0 is older than any"):
        list(read_stream(["-"], stdin=io.BytesIO(b'{"kind":"graph","v":0,"run":"x","phase":"p"}\n')))


def test_every_shipped_major_has_a_chain_to_the_current_one():
    from pt2kit.schema import SCHEMA_MAJOR

    assert all(m in migrations.MIGRATIONS for m in range(migrations.oldest_readable(), SCHEMA_MAJOR))
