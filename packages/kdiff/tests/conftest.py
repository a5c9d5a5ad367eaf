from __future__ import annotations

import pytest
from kdtest import kdiff_in

from pt2kit.testkit import Result


@pytest.fixture
def kdiff(tmp_path):
    def go(*args: str, stdin: bytes | None = None) -> Result:
        return kdiff_in(tmp_path, *args, stdin=stdin)

    return go


def pytest_configure(config):
    config.addinivalue_line("markers", "xdist_group(name): tests sharing one slow run, kept on one xdist worker")
