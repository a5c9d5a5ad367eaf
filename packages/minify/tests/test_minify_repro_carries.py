"""What minify's repro carries from the run that failed, as a user reruns it: dynamic shapes, the inputs'
range and real values where the failure needs them, their dtype, the settings (a tuple stays a tuple, a
backend file's top-level settings). Each repro runs alone and fails; split from test_minify_cli.py."""

from __future__ import annotations

import re
import subprocess
import sys

from mntest import MODELS, cannot_test, run_repro, switch_off

RELU_BUG = "cpp.inject_relu_bug_TESTING_ONLY"
# a 1-op CPU accuracy repro's (issue 58: 1,595 lines with five files embedded whole; 758 while every config, layout
# and float64_mode code was carried; 502, 391, 346, 314 as the full form's check was cut to what it reaches, mostly
# kdiff's float64 rule, the 125 contract, the input making and the precision; 124 in the short form, PyTorch's own
# accuracy rule, where it fails in every fresh run)
MAX_LINES = 150


def test_a_dynamic_shape_graph_gives_a_dynamic_repro_that_reproduces(minify, tmp_path):
    out = tmp_path / "repro.py"
    # --no-bisect: the relu bug's stage is test_the_relu_bug_is_bisected...'s; here no bisect record, no line
    r = minify(f"{MODELS / 'dynamic_view.py'}:make", "--config", f"{RELU_BUG}=accuracy", "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    assert not r.kind("bisect") and "bisect" not in r.stderr and "Stage (" not in out.read_text()
    (rep,) = r.kind("repro")
    assert rep["ops"] == ["aten.relu.default"] and rep["reproduced"] == 3
    assert rep["inputs_after"] < rep["inputs_before"]  # sizes shrink in a dynamic graph too
    text = out.read_text()
    assert "dynamic shapes" in text and text.rstrip().endswith("dynamic=True))")
    # issue 58: a 1-op repro was 1,595 lines, five files embedded whole; now the graph first, its inputs, then
    # only what its check reaches, by source (the float64 reference, PyTorch's rule and the precision are most)
    assert len(text.splitlines()) <= MAX_LINES, len(text.splitlines())
    assert text.index("class Repro(") < text.index("INPUTS = ") < text.index("\n# ---- the check") \
        < text.index('if __name__ == "__main__":')
    for unreached in ("def violations(", "def aoti_run(", "def gradients(", "def load_file_attr(", "def _in_child(",
                      "class installed_decompositions", "def float64_mode(", "def _tensor(", "def copy_inputs(",
                      "def float64_copy(", "torch.backends.cudnn"):
        assert unreached not in text, unreached  # an accuracy bug of a plain aten graph through inductor
    assert "import torch\n" not in text.split("\n# ---- the check")[1]  # the top's, once
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: accuracy"), p.stdout + p.stderr
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    assert run_repro(out).returncode == 0


def test_inputs_keep_the_range_of_the_real_values(minify, tmp_path):
    """A NaN only the compiled side makes, on a log that eagerly reads values >= 1: fed standard normal
    values the cut graph would make NaN eagerly too, a different signature; fed the real range it keeps
    the failure."""
    out = tmp_path / "repro.py"
    r = minify(f"{MODELS / 'small.py'}:posnet", "--backend", f"{MODELS / 'small.py'}:nan_backend",
               "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["signature"] == "nan" and rep["ops"] == ["torch.log"] and rep["reproduced"] == 3
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout == "repro: the bug is present: nan: the compiled outputs hold nan\n", \
        p.stdout + p.stderr
    assert "def short_nan(" in out.read_text()  # the short form (issue 58), the real range in its INPUTS
    switch_off(out, r"BACKEND = .*", "BACKEND = 'inductor'")
    assert run_repro(out).returncode == 0


def test_a_failure_that_needs_the_real_values_gets_them_embedded(minify, tmp_path):
    """Tied votes: the backend's argmax picks the last of tied maxima. Seeded floats never tie (the old
    minify ended in exit 3 here); the repro carries the real votes as literals, and only them."""
    out, m = tmp_path / "repro.py", MODELS / "tied_votes.py"
    r = minify(f"{m}:make", "--backend", f"{m}:last_of_ties", "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["failure"] == "accuracy" and rep["ops"] == ["torch.argmax"] and rep["reproduced"] == 3, rep
    assert "seeded inputs pass: graph 0 with the real values of 4 small input(s)" in r.stderr
    text = out.read_text()
    (inputs,) = re.findall(r"^INPUTS = (.*?)\n[A-Za-z]", text, re.M | re.S)
    assert inputs.count("'tensor'") == 1 and "[0.5, 0.5, 0.0, 0.0, 0.25, 0.25," in inputs, inputs
    assert run_repro(out).returncode == 1
    switch_off(out, r"BACKEND = \(.*\)", "BACKEND = 'eager'")
    assert run_repro(out).returncode == 0


def test_inputs_become_float32_unless_the_bug_is_about_their_dtype(minify, tmp_path):
    out = tmp_path / "repro.py"
    r = minify(f"{MODELS / 'small.py'}:half", "--config", f"{RELU_BUG}=accuracy", "-o", str(out), "--no-bisect")
    assert r.code == 1 and r.kind("repro")[0]["reproduced"] == 3 and not r.kind("bisect"), r.stderr
    assert re.search(r"^INPUTS = \[\('tensor', \[[\d, ]+\], \[[\d, ]+\], 'float32'", out.read_text(), re.M)
    assert run_repro(out).returncode == 1
    r = minify(f"{MODELS / 'small.py'}:half", "--backend", f"{MODELS / 'small.py'}:no_bf16_backend", "-o", str(out),
               "--no-bisect")
    assert r.code == 1, r.stderr
    assert r.kind("repro")[0]["signature"] == "NotImplementedError: bfloat16 is not supported by this backend"
    assert "'bfloat16'" in out.read_text().split("INPUTS = ", 1)[1].splitlines()[0]
    assert run_repro(out).returncode == 1


def test_a_tuple_setting_stays_a_tuple_in_every_worker_and_in_the_repro(minify, tmp_path):
    # Inductor prints cpp.cxx into its error: were the tuple a list in the workers (JSON has no
    # tuples), the signature would change and the failure "not reproduce"
    out = tmp_path / "repro.py"
    r = minify(f"{MODELS / 'small.py'}:clean", "--config", "cpp.cxx=('/nonexistent/cc',)",
               "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["signature"] == "InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: " \
                              "('<path>',)" and rep["reproduced"] == 1 == rep["runs"], rep
    assert rep["config"] == {"cpp.cxx": "('/nonexistent/cc',)"} and rep["ops"] == ["aten.relu.default"]
    text = out.read_text()
    assert "CONFIG = {'torch._inductor.config': {'cpp.cxx': ('/nonexistent/cc',)}}\n" in text
    assert "the config it sets itself: cpp.cxx=('/nonexistent/cc',)" in text.split('"""')[1].replace("\n", " ")
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: compile-error"), p.stdout + p.stderr
    # a revision where the repro cannot run is 125 with one line: no such device, a torch that does not
    # import, an op this torch lacks (eager cannot run the graph)
    cannot_test(run_repro(out, REPRO_DEVICE="cuda"), "AssertionError: Torch not compiled with CUDA enabled")
    code = f"import sys, runpy; sys.modules['torch'] = None; runpy.run_path({str(out)!r}, run_name='__main__')"
    cannot_test(subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True),
                 "import torch: ModuleNotFoundError: import of torch halted")
    lacking = tmp_path / "lacking.py"
    lacking.write_text(text.replace("torch.ops.aten.relu.default(", "torch.ops.aten.relu_not_in_this_torch.default("))
    cannot_test(run_repro(lacking), "eager cannot run the graph: AttributeError")
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    p = run_repro(out)
    assert p.returncode == 0 and "fixed" in p.stdout, p.stdout + p.stderr


def test_what_a_backend_file_sets_at_its_top_level_is_compiled_under_and_carried_by_the_repro(minify, tmp_path):
    # as importing the file does in the user's script; before, the setting was put back, so the warm worker
    # and the repro disagreed: the search found the relu and 3 fresh runs passed (exit 3)
    out = tmp_path / "repro.py"
    backend = f"{MODELS / 'settings_backend.py'}:inductor_as_set"
    r = minify(f"{MODELS / 'resnet_mlp.py'}:make", "--backend", backend, "-o", str(out), "--no-bisect")
    assert r.code == 1, r.stderr
    assert f"settings_backend.py sets inductor.{RELU_BUG}=accuracy at its top level: the run compiles under it" in r.stderr
    (rep,) = r.kind("repro")
    # a backend of the user's file is handed Dynamo's graph, so the cut is on it
    assert rep["failure"] == "accuracy" and rep["ops"] == ["torch.relu"] and rep["reproduced"] == 3, rep
    assert f"CONFIG = {{'torch._inductor.config': {{'{RELU_BUG}': 'accuracy'}}}}" in out.read_text()
    assert run_repro(out).returncode == 1
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")  # the file's top level does not reach the repro: its CONFIG does
    assert run_repro(out).returncode == 0
