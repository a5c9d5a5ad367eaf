"""The parent-child contract is spelled once (boot/pt2kit_capture_contract.py): the parent's msgspec
Structs decode exactly its fields, and the boot's lines carry exactly them."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import torch

import pt2kit.capture
from pt2kit.capture.boot import pt2kit_capture_contract as contract
from pt2kit.capture.job import Job
from pt2kit.capture.records import Entry, Exit, Input

BOOT = Path(pt2kit.capture.__file__).parent / "boot"


def test_the_parents_structs_are_the_contracts_lines():
    parents_own = {"part", "proc", "unrunnable"}  # set by the parent (numbering, tagging, its run check), never by the boot
    assert set(Entry.__struct_fields__) - parents_own == set(contract.Line.__annotations__)
    assert set(Input.__struct_fields__) == set(contract.InputLine.__annotations__)
    assert set(Exit.__struct_fields__) == set(contract.ExitLine.__annotations__)


def test_a_line_the_boot_writes_has_every_field_and_decodes(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BOOT))
    monkeypatch.setenv(contract.ENV_DIR, str(tmp_path))
    import pt2kit_capture_manifest as manifest

    line = manifest.new_line("eager")
    line["compile_id"] = "0/0"
    graph = torch.fx.Graph()
    graph.output(graph.call_function(torch.neg, (graph.placeholder("x"),)))
    manifest.record(line, torch.fx.GraphModule(torch.nn.Module(), graph), [torch.ones(2)], "handed")
    assert set(line) == set(contract.Line.__annotations__)
    assert set(line["inputs"][0]) <= set(contract.InputLine.__annotations__)
    entry = msgspec.json.decode(msgspec.json.encode(line), type=Entry)
    assert (entry.file, entry.values, entry.selected) == (line["file"], "small", True)


def test_the_command_gets_the_contracts_variables():
    job = Job(command=["python", "t.py"], graphs=("0/1", "aoti/0"), rank=None, values="none", check="nan")
    env = contract.child_env("/s", job.values, job.max_value_bytes, job.run_budget, job.rank, job.graphs, job.check)
    assert env == {"PT2KIT_CAPTURE_DIR": "/s", "PT2KIT_CAPTURE_VALUES": "none",
                   "PT2KIT_CAPTURE_MAX_VALUE_BYTES": str(64 << 20), "PT2KIT_CAPTURE_MAX_RUN_BYTES": "",
                   "PT2KIT_CAPTURE_RANK": "all", "PT2KIT_CAPTURE_GRAPHS": "0/1,aoti/0", "PT2KIT_CAPTURE_CHECK": "nan"}
    assert contract.child_env("/s", "small", 1, None, 0, ("all",))["PT2KIT_CAPTURE_CHECK"] == ""  # no check
    assert Job(command=["python"]).run_budget == 1 << 30 and sys.modules["pt2kit.capture.job"].VALUES is contract.VALUES
