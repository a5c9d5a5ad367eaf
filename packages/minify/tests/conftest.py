import pytest
from mntest import minify_in

from pt2kit.testkit import Result


@pytest.fixture
def minify(tmp_path):
    def go(*args: str, stdin: bytes | None = None, timeout: float = 400) -> Result:
        return minify_in(tmp_path, *args, store=tmp_path / "store", stdin=stdin, timeout=timeout)

    return go


def pytest_configure(config):
    # pytest-xdist's --dist loadgroup keeps a group's tests (and their module fixture's one run) together
    config.addinivalue_line("markers", "xdist_group(name): run these tests in one xdist worker")
