"""Every tool that reads a stream, fed what is not one: cut, endless, oversized or mutated. It ends
with exit 0, 1 or 2 (never 3) in bounded memory, before any model runs (the streams here name none:
a tool that would run one is out of scope). `pt2kit cat/ls/gc`: packages/runtime/tests/test_readers.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "schemas" / "tests"))
from mutate import HOSTILE_CAP, feed, hostile_stream  # noqa: E402

READERS = {  # the tool, reading stdin without a MODEL argument
    "reportgen": ["--format", "text"],
    "reportgen-html": ["-o", "page.html"],
    "kdiff": [],
    "guardscan": [],
    "minify": [],
    "benchrun": [],
}
BOUND = 160 << 20  # peak RSS: each of these takes ~27 MiB to read a stream here; matplotlib more


def _argv(name: str) -> list[str]:
    return [sys.executable, "-m", f"pt2kit.{name.split('-')[0]}", *READERS[name]]


@pytest.mark.parametrize("how", ["reportgen /dev/zero", "minify < /dev/zero"])
def test_a_device_with_no_newline_is_one_line_and_exit_2(tmp_path, how):
    tool, _, rest = how.partition(" ")
    with open("/dev/zero", "rb") as zero:
        r = subprocess.run([sys.executable, "-m", f"pt2kit.{tool}", *([rest] if rest.startswith("/") else [])],
                           stdin=zero, capture_output=True, cwd=tmp_path, timeout=120,
                           env=dict(os.environ, PT2KIT_LINE_CAP="1M", PT2KIT_STORE=str(tmp_path / "st")))
    where = "/dev/zero" if tool == "reportgen" else "<stdin>"
    assert r.returncode == 2 and r.stderr.decode() == (
        f"{tool}: error: {where}:1: line longer than 1 MiB, the cap on a record's line ($PT2KIT_LINE_CAP sets it): "
        "is this a stream?\n")


# each reader gets its own 3 streams (24 drawn over all readers gave one reader 0 to 8; each run is a fresh
# Python, 0.5 s of CPU): 18 runs, every reader's bound asserted every time
@pytest.mark.parametrize("tool", sorted(READERS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(stream=hostile_stream(models=False))
def test_every_stream_reader_on_hostile_streams_ends_0_1_or_2_in_bounded_memory(tmp_path_factory, tool, stream):
    data, endless = stream
    tmp = tmp_path_factory.mktemp("r")
    env = dict(os.environ, PT2KIT_LINE_CAP=str(HOSTILE_CAP), PT2KIT_STORE=str(tmp / "st"))
    code, err, rss = feed(_argv(tool), data, endless, env=env, cwd=tmp)
    assert code in (0, 1, 2) and "internal error" not in err and "Traceback" not in err, err
    assert "running model file" not in err  # nothing here may run a model
    assert rss < BOUND, f"{tool}: peak RSS {rss >> 20} MiB"
    if code == 2:
        assert err.strip().splitlines()[-1].startswith(f"{tool.split('-')[0]}: error: "), err
