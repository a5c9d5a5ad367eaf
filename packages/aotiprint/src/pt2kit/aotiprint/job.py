"""aotiprint's options, typed: the one Struct the flags build, the parent runs and the worker decodes.

Guarantees: a Job that exists is a valid combination of flags (a PACKAGE.pt2 with its --inputs, no
--jit for it, --save-package only for a model file compiled by AOTI), checked in ``__post_init__`` so a
bad one is exit 2 in one line before anything runs. Not checked here: that the files exist (the
parent's :mod:`.drive` does, before the header).
"""

from __future__ import annotations

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.flags import renamed
from pt2kit.runtime.common.job import ModelJob

DETAILS = ("names", "stats", "save")  # what the printer records: the --detail values


def kernel_list(text: str | None) -> list[str] | None:
    """--kernels K1,K2 as a list of names; None when not given."""
    if text is None:
        return None
    names = [k.strip() for k in text.split(",") if k.strip()]
    if not names:
        raise UsageError("--kernels: give kernel names, e.g. --kernels cpp_fused_relu_0,aoti_torch_cpu_addmm_out")
    return names


def detail_of(detail: str | None, mode: str | None, ima: bool) -> str:
    """The printer detail from --detail and its hidden old name --mode (both, differing, is exit 2);
    neither: names with --ima (the crash, not the values, is sought), stats otherwise."""
    return renamed("--detail", detail, "--mode", mode) or ("names" if ima else "stats")


class Job(ModelJob, frozen=True, kw_only=True):
    detail: str = "stats"  # --detail: names | stats | save (--mode, its old name)
    kernels: list[str] | None = None
    jit: bool = False
    ima: bool = False
    inputs: str | None = None  # FILE.py[:NAME] with a package's inputs
    save_package: str | None = None  # where the parent keeps the compiled package
    # filled by the parent (:mod:`.drive`) for the worker
    label: str = ""
    log: str = ""  # where the printer's C stdout goes
    workdir: str = ""  # the stock printer saves under ./tmp/ of it

    @property
    def package(self) -> str | None:
        """The PACKAGE.pt2 to run instead of compiling a model, when the target is one."""
        return self.model if self.model is not None and self.model.endswith(".pt2") else None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.detail not in DETAILS:
            raise UsageError(f"--detail {self.detail}: expected one of {', '.join(DETAILS)}")
        package = self.package
        if package is not None:
            if self.jit:
                raise UsageError("--jit compiles a model file; a PACKAGE.pt2 is already AOT compiled")
            if not self.inputs:
                raise UsageError(f"{package}: a package needs inputs: --inputs FILE.py[:NAME]")
            if self.save_package is not None:
                raise UsageError(f"--save-package keeps the package compiled from a MODEL.py; {package} is one already")
        else:
            if self.inputs:
                raise UsageError("--inputs goes with a PACKAGE.pt2; a model file brings its own example_inputs")
            if self.save_package is not None and (self.jit or not self.save_package.endswith(".pt2")):
                raise UsageError("--save-package PATH.pt2 keeps an AOTI package (not with --jit)")
