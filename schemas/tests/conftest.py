from __future__ import annotations

import pytest

from pt2kit.schema.stream import RecordWriter


@pytest.fixture
def writer_out():
    import io

    buf = io.BytesIO()
    return RecordWriter(buf, run="run-1"), buf
