from __future__ import annotations

import pytest
from gstest import guardscan_in

from pt2kit.testkit import Result


@pytest.fixture
def guardscan(tmp_path):
    def go(*args: str, stdin: bytes | None = None) -> Result:
        return guardscan_in(tmp_path, *args, stdin=stdin)

    return go


def pytest_configure(config):
    # tests that share one slow run carry it: `nox` runs pytest-xdist with --dist loadgroup, which keeps a
    # group on one worker; registered here so a plain pytest without xdist knows the mark too
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
