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


def test_a_whole_line_capture_cannot_read_is_said_to_be_captures_fault_not_cut_short(tmp_path):
    """Issue 45: a manifest line the parent could not read (a jagged size written as null) was counted as
    "cut short by the command's end": a killed process's half line is the only line said so."""
    from pt2kit.capture.narrate import Summary
    from pt2kit.capture.records import read_processes

    p = tmp_path / "p123"
    p.mkdir()
    (p / "graphs.ndjson").write_text('{"pid": 123, "inputs": [{"name": "x", "shape": [3, null]}]}\n{"pid": 1')
    (proc,) = read_processes(tmp_path)
    assert proc.broken == 1 and len(proc.unreadable) == 1 and "$.inputs[0].shape[1]" in proc.unreadable[0]
    said: list[str] = []
    Narrator(said.append, "t.py").finish(Summary(returncode=0, compiled=0, kept=0, processes=0, broken=proc.broken,
                                                 unreadable=tuple(proc.unreadable)), {})
    assert said[:2] == ["1 graph line(s) were cut short by the command's end and are left out",
                        f"1 graph line(s) capture could not read are left out ({proc.unreadable[0]}): a fault of "
                        "pt2kit capture, please report it"]


def test_a_script_whose_only_graph_was_a_failing_export_is_not_told_it_called_no_compiled_function():
    """torch.export.export raised before any graph existed: capture said "no graph was compiled (torch.compile
    handed its backend none: the command called no compiled function ...)", beside the export's crash line."""
    from pt2kit.capture.narrate import Summary

    said: list[str] = []
    Narrator(said.append, "t.py").finish(Summary(returncode=0, compiled=0, kept=0, processes=0, broken=0, booted=1,
                                                 hooked=1, exports=1), {})
    assert said == ["no graph was captured: the script's torch.export.export raised 1 time before any graph existed "
                    "(said above), and nothing else compiled"]
