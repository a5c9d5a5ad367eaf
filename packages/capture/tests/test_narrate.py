"""capture's line per graph names where the user's code called the compiled model when the function Dynamo
compiled is a library's (a Hugging Face model is compiled through transformers' generic.py wrapper: that
line alone named no line of the user's)."""

from __future__ import annotations

from pt2kit.capture.narrate import Narrator
from pt2kit.schema import BlobRef, Captured, Model


def _line(source: str, called_from: str | None) -> str:
    said: list[str] = []
    code = BlobRef(path="blobs/00/00.py", sha256="00", size=0, media_type="text/x-python")
    captured = Captured(command=["python", "train.py"], compile_id="0/0", code=code, backend="inductor",
                        function="wrapper", source=source, called_from=called_from)
    model = Model(v=1, run="r", model="train.py[0/0]", file="/s/00.py", inputs=[], captured=captured)
    Narrator(said.append, "train.py").on_model(model)
    (line,) = said
    return line


def test_a_library_function_names_the_users_calling_line():
    lib = "/venv/lib/python3.11/site-packages/transformers/utils/generic.py:933"
    assert _line(lib, "/w/train.py:17").startswith(f"train.py[0/0]: wrapper at {lib}, called from /w/train.py:17 (")


def test_the_users_own_function_is_named_alone():
    assert _line("/w/train.py:9", "/w/train.py:17").startswith("train.py[0/0]: wrapper at /w/train.py:9 (inductor)")
