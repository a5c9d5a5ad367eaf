"""Reading an AOTI package's C++ wrapper: which arguments are unwritten before a launch (torch-free).

``aoti_compile_and_package`` stores the generated ``*.wrapper.cpp`` in the .pt2 zip. Its
``run_impl`` is straight-line code: buffers come from ``aoti_torch_empty_strided(..., &bufN_handle)``
(or take over another's memory on a ``// reuse`` line) and hold garbage until a launch writes
them. The printer's calls name each argument and launch, so walking the lines in order says, for
each argument printed or saved before a launch, whether anything has written it yet.

An extern call the printer does not wrap (the proxy executor's, for an op with no C shim: a custom
op, or ``aten._grouped_mm`` where no shim exists) is kept as an :class:`ExternCall` with its place
among the printed launches, so a crash the printer's output stops after can be named by it.

Save-mode lines are made unique per call site by :func:`number_save_sites` (the stock printer names
its files after kernel and argument only, so a kernel launched twice overwrites its own files).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field

_ALLOC = re.compile(r"aoti_torch_empty_strided\(.*&(\w+)_handle\)")
_REUSE = re.compile(r"^\s*(?:auto|RAIIAtenTensorHandle|AtenTensorHandle)?\s*(\w+)\s*=.*//\s*reuse\s*$")
_PRINT = re.compile(r'aoti_torch_print_tensor_handle\((.+?), "(before_launch|after_launch) - (\S+) - (\S+)"\)')
_SCALAR = re.compile(r'printf\("\[  (before_launch|after_launch) - (\S+) - (\w+): %')
_NAMES = re.compile(r'printf\("\[ (before_launch|after_launch): (\S+) \]')
_SAVE = re.compile(r'aoti_torch_save_tensor_handle\((.+?), "(\S+)", "(before_launch|after_launch)(@\d+)?", "(\S+)"\)')
_DECL = re.compile(r"^\s*(AtenTensorHandle \w+_handle;|RAIIAtenTensorHandle \w+\(\w+_handle\);)\s*$")
_BUF = re.compile(r"\bbuf\d+\b")
_PROXY = re.compile(r"\baoti_torch_proxy_executor_call_function\(\s*\w+,\s*(\d+)\s*,")
_SHIM = re.compile(r"\bAOTI_TORCH_ERROR_CODE_CHECK\((aoti_torch_(?:cpu|cuda|xpu|mps)_\w+)\(")
PROXY_CALL = "aoti_torch_proxy_executor_call_function"


@dataclass
class Site:
    when: str  # before | after
    kernel: str
    arg: str
    uninitialised: bool = False
    save_id: int | None = None


@dataclass
class WrapperLaunch:
    kernel: str
    sites: list[Site] = field(default_factory=list)

    def uninitialised(self) -> set[str]:
        return {s.arg for s in self.sites if s.when == "before" and s.uninitialised}


@dataclass
class ExternCall:
    after: int  # how many printed launches the wrapper makes before this call
    name: str  # the C shim function, or PROXY_CALL
    node: int | None = None  # the proxy executor's extern node (its index in the package's wrapper.json)


@dataclass
class Wrapper:
    launches: list[WrapperLaunch] = field(default_factory=list)
    modes: set[str] = field(default_factory=set)  # stats | names | save: what the package was built with
    saves: dict[int, Site] = field(default_factory=dict)
    externs: list[ExternCall] = field(default_factory=list)  # extern calls the printer does not wrap


def _body(src: str) -> list[str]:
    start = src.find("::run_impl(")
    if start < 0:
        return src.splitlines()
    end = src.find("// AOTInductorModel::run_impl", start)
    return src[start:end if end > 0 else None].splitlines()


def analyse(src: str) -> Wrapper:
    w = Wrapper()
    fresh: set[str] = set()
    last: WrapperLaunch | None = None
    last_when = ""

    def site(when: str, kernel: str, arg: str, save_id: int | None = None) -> None:
        nonlocal last, last_when
        w_ = "before" if when == "before_launch" else "after"
        if last is None or last.kernel != kernel or (w_ == "before" and last_when == "after"):
            last = WrapperLaunch(kernel)
            w.launches.append(last)
        last_when = w_
        s = Site(w_, kernel, arg, uninitialised=(w_ == "before" and arg in fresh), save_id=save_id)
        if arg:
            last.sites.append(s)
        if save_id is not None:
            w.saves[save_id] = s

    for line in _body(src):
        m = _PRINT.search(line)
        if m:
            w.modes.add("stats")
            site(m.group(2), m.group(3), m.group(4))
            continue
        m = _SAVE.search(line)
        if m:
            w.modes.add("save")
            sid = int(m.group(4)[1:]) if m.group(4) else None
            site(m.group(3), m.group(5), m.group(2), sid)
            continue
        m = _SCALAR.search(line)
        if m:
            w.modes.add("stats")
            site(m.group(1), m.group(2), m.group(3))
            continue
        m = _NAMES.search(line)
        if m:
            w.modes.add("names")
            site(m.group(1), m.group(2), "")
            continue
        m = _ALLOC.search(line)
        if m:
            fresh.add(m.group(1))
            continue
        m = _REUSE.match(line)
        if m:
            fresh.add(m.group(1))
            continue
        if _DECL.match(line) or "aoti_torch_print_tensor_handle" in line:
            continue
        m = _PROXY.search(line)
        if m:
            w.externs.append(ExternCall(len(w.launches), PROXY_CALL, int(m.group(1))))
        else:
            m = _SHIM.search(line)
            printed = last is not None and last_when == "before" and m is not None and last.kernel == m.group(1)
            if m and not printed:
                w.externs.append(ExternCall(len(w.launches), m.group(1)))
        # anything else that names a buffer (a launch, a copy) counts as writing it
        fresh.difference_update(_BUF.findall(line))
    return w


def number_save_sites(src: str) -> str:
    """Give every save call its own file: ``"before_launch"`` -> ``"before_launch@7"``."""
    count = iter(range(1 << 30))
    return re.sub(r'(aoti_torch_save_tensor_handle\(.+?, "\S+", ")(before_launch|after_launch)(")',
                  lambda m: f"{m.group(1)}{m.group(2)}@{next(count)}{m.group(3)}", src)


def read_wrapper(package: str) -> str | None:
    """The C++ wrapper source inside a .pt2 package, if it holds one."""
    try:
        with zipfile.ZipFile(package) as z:
            names = [n for n in z.namelist() if n.endswith(".wrapper.cpp")] or \
                    [n for n in z.namelist() if n.endswith(".cpp") and "kernel" not in n.rsplit("/", 1)[-1]]
            return z.read(names[0]).decode("utf-8", "replace") if names else None
    except (OSError, zipfile.BadZipFile, KeyError):
        return None


def read_extern_targets(package: str) -> list[str]:
    """The op of each extern node the proxy executor calls (``pt2kit_test::boom``), from the package's
    ``*.wrapper.json``, in node order; [] when it holds none or cannot be read."""
    import json

    try:
        with zipfile.ZipFile(package) as z:
            names = [n for n in z.namelist() if n.endswith(".wrapper.json")]
            nodes = json.loads(z.read(names[0])).get("nodes", []) if names else []
        return [str((n.get("node") or {}).get("target") or "") for n in nodes]
    except (OSError, zipfile.BadZipFile, KeyError, ValueError, AttributeError, TypeError):
        return []


def save_id_of(path: str) -> int | None:
    """The site number :func:`number_save_sites` put into a saved file's name."""
    m = re.search(r"(?:before|after)_launch@(\d+)_", path)
    return int(m.group(1)) if m else None
