"""pt2kit.runtime.worker.aotilock: AOT Inductor's compile-and-package, one program by one process at a time."""

AOTI_CHILD = """
import os, sys, tempfile, torch
from pt2kit.runtime.worker import aotilock
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
class M(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
x = torch.full((4,), 2.0)
ep = torch.export.export(M(), (x,))
print(aotilock.program_lock(ep), flush=True)
with tempfile.TemporaryDirectory() as d:
    path = aotilock.compile_package(ep, os.path.join(d, "m.pt2"))
    print(torch._inductor.aoti_load_package(path)(x).tolist(), flush=True)
"""


def Relu():
    import torch

    class M(torch.nn.Module):  # the child's, by the same names
        def forward(self, x):
            return torch.relu(x)

    return M()


def Unary(op):
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            return op(x)

    return M()


def test_aot_inductor_compiles_and_packages_one_program_under_one_lock_per_machine(tmp_path):
    # two processes compiling the same program share Inductor's cache folder, and the package is zipped
    # outside Inductor's lock: without ours, 2 of 60 side-by-side runs packaged a half-written file
    import fcntl
    import subprocess
    import sys
    import time

    import torch

    from pt2kit.runtime.worker.aotilock import lock_path, program_lock

    child = subprocess.Popen([sys.executable, "-c", AOTI_CHILD], stdout=subprocess.PIPE, text=True)
    name = child.stdout.readline().strip()
    # the same name for the same program in another process; another program's, most often another
    x = torch.full((4,), 2.0)
    assert name == program_lock(torch.export.export(Relu(), (x,))) and name.startswith("aoti-")
    others = {program_lock(torch.export.export(Unary(op), (x,))) for op in (torch.sin, torch.cos, torch.exp, torch.neg,
                                                                          torch.abs, torch.tanh, torch.sigmoid)}
    assert len(others) > 1
    held = False
    with open(lock_path(name), "a") as f:
        while child.poll() is None and not held:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
                time.sleep(0.005)
            except BlockingIOError:
                held = True  # the child is compiling and holds it
    out, _ = child.communicate(timeout=300)
    assert held and child.returncode == 0
    assert out.strip() == "[3.0, 3.0, 3.0, 3.0]"  # the planted bug's relu(x) = x + 1, run from the package


def test_the_cpu_isa_probe_is_made_before_the_lock_and_kept_for_the_compile():
    import subprocess
    import sys

    probe = ("import sys\nfrom pt2kit.runtime.worker import aotilock\nfrom torch._inductor import cpu_vec_isa\n"
             "if sys.argv[1] == 'warm':\n    aotilock.warm_cpu_isa()\n"
             "print(cpu_vec_isa.valid_vec_isa_list.cache_info().currsize)")
    runs = [subprocess.run([sys.executable, "-c", probe, w], capture_output=True, text=True, check=True).stdout
            for w in ("cold", "warm")]
    assert runs == ["0\n", "1\n"]  # made by warm_cpu_isa, and cached where aoti_compile_and_package asks
