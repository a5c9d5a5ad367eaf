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
def benchrun(tmp_path):
    def run(*args: str, stdin: bytes | None = None, timeout: float = 600) -> Result:
        p = subprocess.run([sys.executable, "-m", "pt2kit.benchrun", *args, "--store", str(tmp_path / "store")],
                           input=stdin if stdin is not None else b"", capture_output=True, timeout=timeout,
                           cwd=tmp_path)
        return Result(p.returncode, p.stdout, p.stderr.decode())

    return run
