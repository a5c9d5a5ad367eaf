"""``with pt2kit.capture() as cap:`` in a real notebook, run in a real Jupyter kernel (nbclient, ipykernel)
as a user runs it: a model under Inductor's planted relu bug compiled in the block, the records shown as
reportgen's page, ``cap.kdiff()`` naming aten.relu at the cell's own line, and the kernel going on after
it with the compiler as it was before the block; then a ``%%pt2kit`` cell; then ``cap.triage()`` on the
block's kdiff verdict (the bug report shown, its repro failing alone) and a ``%%pt2kit triage`` cell refused the
same folder; last, a block whose compiled code kills the kernel (a planted segfault), and a fresh kernel that
recovers its records. The notebook runs once; every test reads its outputs. Each graph is labelled by its
cell, as the kernel's tracebacks name it (``In[1]:33[0/0]``)."""

from __future__ import annotations

import html
import json

import pytest

from pt2kit.testkit import run_alone

pytestmark = pytest.mark.xdist_group("capture-notebook")

SETUP = '''\
import json, os, sys
import torch
import pt2kit.capture
from torch._dynamo.repro import after_dynamo

def state():
    """What the capture must leave as it found it."""
    return {"wrap_backend_debug": after_dynamo.wrap_backend_debug.__qualname__,
            "meta_path": [type(f).__name__ for f in sys.meta_path],
            "env": sorted(k for k in os.environ if k.startswith("PT2KIT_CAPTURE")),
            "boot_on_path": any(p.endswith("boot") and "capture" in p for p in sys.path)}

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2

torch.manual_seed(0)
net, x = Net(), torch.randn(4, 8)
before = state()
print(json.dumps({"file": Net.forward.__code__.co_filename, "line": Net.forward.__code__.co_firstlineno + 1}))
'''

CAPTURE = '''\
with pt2kit.capture() as cap, torch.no_grad():
    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
    out = torch.compile(net)(x)
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = None
cap.records
'''

KDIFF = '''\
d = cap.kdiff()
print(json.dumps({"exit": d.exit_code, "divergences": [[v.op, v.source] for v in d.of("divergence")],
                  "labels": [m.model for m in cap.records.of("model")]}))
'''

MAGIC = '''\
%%pt2kit
def twice(t):
    return t.cos() * 2
y = torch.compile(twice, backend="eager")(x)
'''

MAGIC_AFTER = '''\
print(json.dumps({"y": torch.equal(y, twice(x)), "state": state() == before,
                  "models": [[m.captured.function, m.captured.source, m.model] for m in _pt2kit.records.of("model")]}))
'''

AFTER = '''\
with torch.no_grad():
    again = torch.compile(net)(x)
print(json.dumps({"same": state() == before, "state": state(), "close": torch.allclose(again, net(x) ),
                  "models": len(cap.records.of("model"))}))
'''

# triage's judgement on the block's records, in the kernel: its folder, shown as the bug report; from kdiff's
# records (d): triage's minify, bisection and report on the verdict the kernel has, without kdiff again
TRIAGE = '''\
t = d.triage(out="tri")
print(json.dumps({"exit": t.exit_code, "folder": str(t.folder), "repro": str(t.repro)}))
t
'''

# the magic's triage, into the same folder: refused (triage never writes into a folder holding files)
MAGIC_TRIAGE = '''\
%%pt2kit triage --out tri
z = x + 1
'''

# compiled code that kills the kernel, as a segfault in Inductor's C++ does (the crash is planted: what is
# tested is ours, what the block leaves for the restarted kernel); the notebook's last cell
CRASH = '''\
import ctypes

def segfaults(gm, example_inputs):
    def run(*args):
        ctypes.string_at(0)  # a read of address 0: SIGSEGV
        return gm(*args)
    return run

def plus(t):
    return t.sin() + 1

with pt2kit.capture():
    torch.compile(plus, backend=segfaults)(x)
'''

# the restarted kernel: the dead block's records, then nothing more to recover
RECOVER = '''\
import json, pt2kit.capture
rec = pt2kit.capture.recover()
try:
    pt2kit.capture.recover()
except FileNotFoundError as e:
    again = str(e)
print(json.dumps({"models": [[m.model, m.captured.function, m.captured.source] for m in rec.records.of("model")],
                  "crashes": [[c.model, c.stage, c.signal, c.message] for c in rec.records.of("crash")],
                  "again": again}))
'''


def _kernel():
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    # ipykernel's own spec of this interpreter: never a python3 kernel installed elsewhere (~/.local/share/jupyter);
    # the async manager nbclient's own default is: with a blocking one, a kernel that dies is never noticed
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    here = tmp_path_factory.mktemp("notebook")
    cells = (SETUP, CAPTURE, KDIFF, AFTER, "%load_ext pt2kit.capture", MAGIC, MAGIC_AFTER, TRIAGE, MAGIC_TRIAGE, CRASH)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    where = {"metadata": {"path": str(here)}}
    with pytest.raises(nbclient.exceptions.DeadKernelError):  # the last cell kills the kernel
        nbclient.NotebookClient(nb, km=_kernel(), timeout=300, resources=where).execute()
    recovered = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(RECOVER)])
    nbclient.NotebookClient(recovered, km=_kernel(), timeout=300, resources=where).execute()
    return nb, here, recovered


def _json(cell) -> dict:
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
    return json.loads(text.strip().splitlines()[-1])


def test_the_records_show_as_reportgens_page_of_the_graph_compiled_in_the_block(notebook):
    nb, here, _ = notebook
    shown = [o for o in nb.cells[1].outputs if o.get("output_type") == "execute_result"]
    frame = shown[0]["data"]["text/html"]
    assert frame.startswith("<iframe srcdoc=") and "<" not in frame[1:frame.index(">")]  # the page stays inside
    page = html.unescape(frame[len('<iframe srcdoc="'):frame.index('" title=')])
    assert page.lstrip().lower().startswith("<!doctype html>") and "pt2kit capture" in page
    where = _json(nb.cells[0])
    assert f"{where['file']}" in page  # the model record's graph, called from the cell
    assert (here / "pt2kit-out").is_dir() and not list((here / "pt2kit-out").glob(".capture-*"))  # scratch gone


def test_kdiff_in_the_kernel_names_aten_relu_at_the_cells_own_line(notebook):
    nb, _, _ = notebook
    where, got = _json(nb.cells[0]), _json(nb.cells[2])
    assert got["exit"] == 1  # a failing verdict is data, not an exception: the cell ran to its end
    assert got["divergences"] == [["aten.relu.default", f"{where['file']}:{where['line']}"]]
    # the graph named by its cell, as the kernel's tracebacks name it (Cell In[1]), at the forward's def
    assert got["labels"] == [f"In[{nb.cells[0].execution_count}]:{where['line'] - 1}[0/0]"]


def test_the_kernel_goes_on_with_the_compiler_as_it_was_before_the_block(notebook):
    nb, _, _ = notebook
    after = _json(nb.cells[3])
    assert after["same"], after["state"]
    assert "AfterImport" not in after["state"]["meta_path"] and after["state"]["env"] == []
    # compiled again after the block: without the planted bug (the user turned it off), and not captured
    assert after["close"] and after["models"] == 1


def test_a_pt2kit_cell_runs_in_the_kernel_under_capture_and_shows_its_records(notebook):
    nb, _, _ = notebook
    shown = [o for o in nb.cells[5].outputs if o.get("output_type") == "execute_result"]
    assert "twice" in shown[0]["data"]["text/html"]  # the page of the cell's graph
    got = _json(nb.cells[6])
    (function, source, label), = got["models"]
    file, _, line = source.rpartition(":")
    assert label.startswith(f"In[{nb.cells[5].execution_count}]:1[") and label.endswith("/0]")
    # the cell's own code, compiled as a cell: its variables the kernel's, its lines its own
    assert got["y"] and got["state"] and function == "twice" and line == "1"
    assert file != _json(nb.cells[0])["file"] and file.endswith(".py")


def test_triage_in_the_kernel_writes_the_bug_report_of_the_block_and_shows_it(notebook):
    nb, here, _ = notebook
    where, got = _json(nb.cells[0]), _json(nb.cells[7])
    assert got == {"exit": 1, "folder": "tri", "repro": "tri/repro.py"}
    report = (here / "tri" / "bug-report.md").read_text()
    shown = [o for o in nb.cells[7].outputs if o.get("output_type") == "execute_result"]
    assert shown[0]["data"]["text/markdown"] == report  # the cell shows the bug report itself
    title, *_ = report.splitlines()
    assert title.startswith("# [inductor] wrong results in aten.relu.default at ")
    assert f"  - the op: `aten.relu.default`\n  - in your code: `{where['file']}:{where['line']}`" in report
    # no script to run again: the report says where the records came from
    assert "A block of code captured in process under `torch.compile` (`with pt2kit.capture()`" in report
    assert "There is no script to run again" in report and "pt2kit capture --store" not in report
    assert "kdiff: skipped: the records given (--from) hold kdiff's verdict on every graph already" in report
    assert "\nkdiff --store" not in report and "\nminify --store pt2kit-out -o tri/repro.py < tri/guardscan.ndjson" in report
    # it fails alone, torch alone (pt2kit blocked; forked from the run's warm server where there is one: a fresh
    # Python's imports were 8 s of the test)
    repro = run_alone(here / "tri" / "repro.py")
    assert repro.returncode == 1, repro.stdout + repro.stderr


def test_a_pt2kit_triage_cell_into_a_folder_that_holds_files_is_refused_and_says_so(notebook):
    nb, here, _ = notebook
    shown = [o for o in nb.cells[8].outputs if o.get("output_type") == "execute_result"]
    assert shown[0]["data"]["text/markdown"] == (
        "pt2kit triage: exit 2, no bug report: `triage: error: --out tri: the folder holds files already; triage "
        "writes only into a new or empty folder (give another --out, or leave it out for a fresh triage-N)`")
    # the first run's folder as it wrote it: the report still the block's
    assert "aten.relu.default" in (here / "tri" / "bug-report.md").read_text()


def test_a_block_whose_compiled_code_kills_the_kernel_is_recovered_after_the_restart(notebook):
    nb, here, recovered = notebook
    said = "".join(o.get("text", "") for o in nb.cells[9].outputs if o.get("name") == "stderr")
    # the block said where it records, before the kernel died
    assert f"capture: recording into {here}/pt2kit-out/.capture-" in said and "pt2kit.capture.recover()" in said
    got = _json(recovered.cells[0])
    (label, function, source), = got["models"]
    cell = nb.cells[8].execution_count + 1  # the crash's cell: the dead kernel's next
    assert label.startswith(f"In[{cell}]:9[") and function == "plus" and source.endswith(".py:9")
    (graph, stage, signal, message), (_, *block) = got["crashes"]
    # the graph whose compiled call was running, and the signal faulthandler reported
    assert (graph, stage, signal, message) == (label, "run", "SIGSEGV", "killed by SIGSEGV in its compiled forward")
    assert block[:2] == ["run", "SIGSEGV"] and block[2].endswith("was killed by SIGSEGV")
    assert got["again"].startswith(f"pt2kit.capture.recover: {here}/pt2kit-out holds no block whose process died")
    assert not list((here / "pt2kit-out").glob(".capture-*"))  # read once, then gone
