"""AOT Inductor's compile-and-package, by one process of the machine at a time: what every tool that compiles
a package (aotiprint, kdiff's ``aoti`` side, minify's candidates and the repro it writes) calls.

Why: the same program compiled by two processes at once is built in the same Inductor cache folder, and the
package, zipped outside Inductor's own lock, can take the other's half-written files; loading it then fails
with "parse error ... attempting to parse an empty input" (2 of 60 side-by-side compiles on torch 2.13; CI
saw it once when aotiprint's README example and a test compiled the same model).

Guarantees: :func:`compile_package` holds :func:`machine_lock` ``("aoti")`` (an ``fcntl`` lock on a file in
the temp folder, one per user; none where there is no ``fcntl``) for the compile and the zip, never for the
load; the CPU's vector ISA is probed before the lock (:func:`warm_cpu_isa`), so processes do not queue behind
each other's probe. Imports only torch and the standard library: a repro embeds it by source.
"""

import contextlib
import os
import tempfile

import torch


def compile_package(ep, path, inductor_configs=None):
    """``ep`` (an ExportedProgram) compiled by ``torch._inductor.aoti_compile_and_package`` into a package at
    ``path``, under the machine's AOTI lock; the package's path."""
    warm_cpu_isa()
    with machine_lock("aoti"):
        return torch._inductor.aoti_compile_and_package(ep, package_path=path, inductor_configs=inductor_configs)


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
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
