"""Instrumenting the Python wrapper JIT Inductor generates: a probe before and after every kernel (torch-free).

The wrapper's ``call`` is straight-line code; a kernel launch is one statement of these shapes:

* ``cpp_fused_relu_0(buf0, arg1_1)`` (C++ kernel) and ``triton_poi_fused_0.run(buf0, 16, stream=s)``;
* ``extern_kernels.addmm(b, x, w, alpha=1, beta=1, out=buf0)`` (an extern kernel writing ``out=``);
* ``buf3 = torch.ops.aten.sort.stable(buf2, dim=1)`` (a fallback kernel returning new tensors).

Each becomes ``PROBE.before(i, NAME, {...}, FRESH)``, the launch, ``PROBE.after(i, NAME, {...})`` with
every plain name among its arguments (and what it assigns). ``FRESH`` names the buffers that were
allocated (``empty_strided_*``) or taken over for reuse (``buf2 = buf0; del buf0  # reuse``) and
not yet written by any launch: their values before the launch mean nothing.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

PROBE = "_pt2kit_probe"
_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.(?:cpp_pybinding|cpp|triton|cuda|mps|halide)\(", re.M)
_ALLOC = re.compile(r"^empty_strided(_\w+)?$")


@dataclass
class Site:
    launch: int
    kernel: str
    line: int  # line in the wrapper source
    args: list[str] = field(default_factory=list)


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _names(call: ast.Call) -> list[str]:
    out: list[str] = []
    for a in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(a, ast.Name) and a.id not in out:
            out.append(a.id)
    return out


def _targets(stmt: ast.stmt) -> list[str]:
    if not isinstance(stmt, ast.Assign):
        return []
    out: list[str] = []
    for t in stmt.targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name):
                out.append(n.id)
    return out


class _Rewriter:
    def __init__(self, kernels: set[str]) -> None:
        self.kernels = kernels
        self.sites: list[Site] = []
        self.fresh: set[str] = set()

    def kernel_of(self, stmt: ast.stmt) -> tuple[str, ast.Call] | None:
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        if not isinstance(value, ast.Call):
            return None
        name = _dotted(value.func)
        if name is None:
            return None
        if isinstance(stmt, ast.Expr):
            if name in self.kernels:
                return name, value
            if name.endswith(".run") and name[: -len(".run")] in self.kernels:
                return name[: -len(".run")], value
            if name.startswith("extern_kernels."):
                return name, value
        if name.startswith(("torch.ops.", "aten.")) and isinstance(stmt, (ast.Assign, ast.Expr)):
            return name.removeprefix("torch.ops."), value
        return None

    def body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            for attr in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, attr, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt) and \
                        not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                    setattr(stmt, attr, self.body(inner))
            found = self.kernel_of(stmt)
            if found is None:
                self._track(stmt)
                out.append(stmt)
                continue
            kernel, call = found
            args = _names(call)
            outs = [t for t in _targets(stmt) if t not in args]
            site = Site(len(self.sites), kernel, stmt.lineno, args + outs)
            self.sites.append(site)
            fresh = sorted(a for a in args if a in self.fresh)
            out.append(self._probe("before", site, args, fresh, stmt))
            out.append(stmt)
            out.append(self._probe("after", site, args + outs, None, stmt))
            self.fresh.difference_update(args)
        return out

    def _track(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            v = stmt.value
            if isinstance(v, ast.Call) and _ALLOC.match(_dotted(v.func) or ""):
                self.fresh.add(target)
            elif isinstance(v, ast.Name) and v.id in self.fresh:
                self.fresh.add(target)

    def _probe(self, when: str, site: Site, names: list[str], fresh: list[str] | None, at: ast.stmt) -> ast.stmt:
        tensors = "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}"
        extra = f", {fresh!r}" if fresh is not None else ""
        node = ast.parse(f"{PROBE}.{when}({site.launch}, {site.kernel!r}, {tensors}{extra})").body[0]
        return ast.copy_location(node, at)


def kernel_names(src: str) -> set[str]:
    return set(_KERNEL_DEF.findall(src))


def _reuse_lines(src: str) -> dict[int, str]:
    """Line number -> the buffer a ``# reuse`` line takes over (its memory holds old values)."""
    out: dict[int, str] = {}
    for i, line in enumerate(src.splitlines(), 1):
        m = re.match(r"^\s*(\w+) = .*#\s*reuse\s*$", line)
        if m:
            out[i] = m.group(1)
    return out


def instrument(src: str) -> tuple[str, list[Site]]:
    """The wrapper with probes around every launch in ``call``, and the launches in order."""
    tree = ast.parse(src)
    rw = _Rewriter(kernel_names(src))
    reuse = _reuse_lines(src)
    done = False
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in ("call", "_call") and not done:
            # a reused buffer holds the old buffer's values: fresh as far as this launch goes
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Assign) and stmt.lineno in reuse:
                    rw.fresh.add(reuse[stmt.lineno])
            node.body = rw.body(node.body)
            done = True
    if not done:
        return src, []
    tree.body.insert(0, ast.parse(f"import pt2kit.aotiprint.probe as {PROBE}").body[0])
    ast.fix_missing_locations(tree)
    return ast.unparse(tree), rw.sites
