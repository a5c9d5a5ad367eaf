import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

MODELS = Path(__file__).parent / "models"


@dataclass
class Result:
    code: int
    stdout: bytes
    stderr: str

    @property
    def records(self) -> list[dict]:
        return [msgspec.json.decode(x) for x in self.stdout.splitlines() if x.strip()]

    def kind(self, k: str) -> list[dict]:
        return [r for r in self.records if r["kind"] == k]


@pytest.fixture
def minify(tmp_path):
    def run(*args: str, stdin: bytes | None = None, timeout: float = 400) -> Result:
        p = subprocess.run([sys.executable, "-m", "pt2kit.minify", *args, "--store", str(tmp_path / "store")],
                           input=stdin, capture_output=True, timeout=timeout, cwd=tmp_path)
        return Result(p.returncode, p.stdout, p.stderr.decode())

    return run


def run_repro(path: Path, **env: str) -> subprocess.CompletedProcess:
    """A fresh, isolated Python in which importing pt2kit fails: the repro needs torch alone."""
    import os

    code = (f"import sys, runpy; sys.modules['pt2kit'] = None; sys.argv = [{str(path)!r}]; "
            f"runpy.run_path({str(path)!r}, run_name='__main__')")
    return subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd=path.parent,
                          env={**os.environ, **env}, timeout=300)


def pytest_configure(config):
    # pytest-xdist's --dist loadgroup keeps a group's tests (and their module fixture's one run) together
    config.addinivalue_line("markers", "xdist_group(name): run these tests in one xdist worker")
