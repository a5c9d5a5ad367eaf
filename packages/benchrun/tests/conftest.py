import pytest

from pt2kit.testkit import Result, module, run


@pytest.fixture
def benchrun(tmp_path):
    def go(*args: str, stdin: bytes | None = None, timeout: float = 600) -> Result:
        return run(module("pt2kit.benchrun", *args, "--store", str(tmp_path / "store")),
                   stdin=b"" if stdin is None else stdin, cwd=tmp_path, timeout=timeout)

    return go
