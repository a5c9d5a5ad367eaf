"""AOT Inductor's compile-and-package, one program by one process of the machine at a time: what every tool that
compiles a package (aotiprint, kdiff's ``aoti`` side, minify's candidates and the repro it writes) calls.

Why: the same program compiled by two processes at once is built in the same Inductor cache folder, and the
package, zipped outside Inductor's own lock, can take the other's half-written files; loading it then fails
with "parse error ... attempting to parse an empty input" (2 of 60 side-by-side compiles on torch 2.13; CI
saw it once when aotiprint's README example and a test compiled the same model).

Guarantees: :func:`compile_package` holds :func:`machine_lock` of the program's name (:func:`program_lock`: an
``fcntl`` lock on a file in the temp folder, one per user and one of 16 stripes the program's graph code and the
config hash to; none where there is no ``fcntl``) for the compile and the zip, never for the load: one program is
compiled by one process at a time, two others, most often, side by side. The CPU's vector ISA is probed before the
lock (:func:`warm_cpu_isa`), so processes do not queue behind each other's probe. Imports only torch and the standard
library: a repro embeds it by source.
"""

import contextlib
import hashlib
import os
import tempfile

import torch


def compile_package(ep, path, inductor_configs=None):
    """``ep`` (an ExportedProgram) compiled by ``torch._inductor.aoti_compile_and_package`` into a package at
    ``path``, under the lock of its program (:func:`program_lock`); the package's path."""
    warm_cpu_isa()
    with machine_lock(program_lock(ep, inductor_configs)):
        return torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=inductor_configs)


def program_lock(ep, inductor_configs=None):
    """The name of ``ep``'s lock, the same in every process for the same program (its graph's code) and config:
    ``aoti-0`` to ``aoti-15``."""
    text = ep.graph_module.code + repr(sorted((inductor_configs or {}).items(), key=str))
    return f"aoti-{int(hashlib.sha256(text.encode()).hexdigest(), 16) % 16}"


def warm_cpu_isa():
    """Inductor probes the CPU's vector ISA once per process, by compiling test programs (about 50 s on
    torch 2.11's CUDA build)."""
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa
    except ImportError:  # moved: the compile probes it, under the lock
        return
    pick_vec_isa()


def lock_path(name):
    """The file whose lock every process of this user on this machine takes for ``name``."""
    return os.path.join(tempfile.gettempdir(), f"pt2kit-{name}-{os.getuid() if hasattr(os, 'getuid') else 0}.lock")


@contextlib.contextmanager
def machine_lock(name):
    """``name``'s lock (:func:`lock_path`), held for the block by one process of this user on this machine at a time;
    none where there is no fcntl (not POSIX)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    with open(lock_path(name), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released as the file closes, however the block ends
        yield
