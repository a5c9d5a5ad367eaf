"""The versions a PyTorch bug report asks for (what ``python -m torch.utils.collect_env`` prints: torch and
how it was built, CUDA, cuDNN, the GPUs, triton, Python, the OS), read in the script's own interpreter,
where the bug happened, in one short child: an import of torch and a few attributes, not collect_env itself,
which runs nvidia-smi, pip, conda, gcc and lscpu in turn.

The interpreter is the command's own ``python``; for a command that is no ``python`` (``torchrun``, a
script with a shebang) the interpreter its shebang names; else triage's own, and the report says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from pt2kit.runtime.parent.pythonrun import python_run

# torch and the standard library only: it runs in the user's interpreter, where pt2kit may not be installed
PROBE = r'''
import json, os, platform, sys
out = {"Python version": sys.version.replace("\n", " "), "Python platform": platform.platform()}
try:
    rel = platform.freedesktop_os_release()
    out["OS"] = rel.get("PRETTY_NAME") or rel.get("NAME")
except OSError:
    out["OS"] = platform.system() + " " + platform.release()
libc = platform.libc_ver()
if libc[0]:
    out["Libc version"] = "-".join(libc)
try:
    with open("/proc/cpuinfo") as f:
        out["CPU"] = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
except OSError:
    pass
from importlib import metadata
for name in ("triton", "numpy"):
    try:
        out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        out[name] = "not installed"
try:
    import torch
except Exception as e:
    out["PyTorch version"] = f"cannot import torch: {type(e).__name__}: {e}"
else:
    out["PyTorch version"] = torch.__version__
    out["Git version"] = getattr(torch.version, "git_version", None)
    out["Is debug build"] = str(torch.version.debug)
    out["CUDA used to build PyTorch"] = torch.version.cuda or "None"
    out["ROCM used to build PyTorch"] = getattr(torch.version, "hip", None) or "None"
    out["cuDNN version"] = str(torch.backends.cudnn.version()) if torch.backends.cudnn.is_available() else "None"
    ok = torch.cuda.is_available()
    out["Is CUDA available"] = str(ok)
    if ok:
        out["GPU models"] = "; ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        out["CUDA runtime version"] = torch.version.cuda
print(json.dumps(out))
'''

def interpreter(command: list[str]) -> tuple[str, str | None]:
    """The interpreter the command's Python runs in, and why, where it is not the command's own ``python``:
    a script's first line read as the kernel reads it (:func:`pt2kit.runtime.parent.pythonrun.python_run`), so a
    bash script whose first line or comments mention python never gets the probe's Python run by bash."""
    run = python_run(command)
    if run is None:
        return sys.executable, f"triage's own: {command[0]} is no python"
    return run.exe, f"the interpreter {command[0]}'s first line names" if run.shebang else None


def start(command: list[str]) -> tuple[subprocess.Popen[bytes] | None, str, str | None]:
    """Start the probe (it runs while the script does); the child, the interpreter, and the note."""
    exe, note = interpreter(command)
    try:
        child = subprocess.Popen([exe, "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 stdin=subprocess.DEVNULL, env=dict(os.environ), start_new_session=True)
    except OSError:
        child = None
    return child, exe, note


def finish(child: subprocess.Popen[bytes] | None, exe: str, note: str | None, timeout: float = 120) -> dict[str, str]:
    """What the probe printed, with the interpreter it ran in; a probe that fails says so in the report."""
    facts: dict[str, str] = {"interpreter": exe + (f" ({note})" if note else "")}
    if child is None:
        return facts | {"error": f"cannot run {exe}"}
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return facts | {"error": f"{exe} did not answer within {timeout:.0f} s"}
    try:
        found = json.loads(out.decode(errors="replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return facts | {"error": f"{exe} printed no versions (exit {child.returncode})"}
    return facts | {k: str(v) for k, v in found.items() if v is not None}
