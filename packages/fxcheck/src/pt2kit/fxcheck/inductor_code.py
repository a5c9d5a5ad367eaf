"""Kernels in the wrapper code Inductor generates: names, kinds and sources.

The wrapper defines each kernel once, as ``NAME = async_compile.KIND(..., '''SOURCE''')`` (Triton,
C++ and Halide alike), which is what this reads; it needs no torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DEF = re.compile(r"^(?P<name>\w+) = async_compile\.(?P<kind>\w+)\(", re.M)
_BODY = re.compile(r"[rR]?('''|\"\"\")(?P<body>.*?)\1", re.S)


@dataclass
class KernelSource:
    name: str
    kind: str  # triton | cpp_pybinding | cpp | halide | ...
    source: str


def kernels(wrapper: str) -> list[KernelSource]:
    out: list[KernelSource] = []
    for m in _DEF.finditer(wrapper):
        body = _BODY.search(wrapper, m.end())
        out.append(KernelSource(m.group("name"), m.group("kind"), body.group("body") if body else ""))
    return out


def suffix(kind: str) -> str:
    return ".py" if kind == "triton" else ".cpp" if kind.startswith("cpp") else ".txt"
