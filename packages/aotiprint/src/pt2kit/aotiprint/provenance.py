"""Kernel -> the FX nodes it fused and the user's lines, from Inductor's provenance artifacts.

With ``trace.provenance_tracking_level`` on, Inductor logs two structured-trace artifacts (what
tlparse shows): ``inductor_provenance_tracking_node_mappings`` (``"cpp_fused_relu_0:2"`` -> post-grad
nodes, post-grad -> pre-grad nodes) and ``..._kernel_stack_traces`` (kernel -> the stack traces of
those nodes). ``NAME:N`` is the kernel's debug handle, given in code order, so the k-th launch of a
kernel name is its k-th handle.
"""

from __future__ import annotations

import json
import re
from typing import Any

_HANDLE = re.compile(r"^(.*):(\d+)$")


def _load(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text) if text else {}
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def resolve(mappings: Any, stacks: Any) -> dict[str, list[dict[str, Any]]]:
    """kernel name -> one entry per handle, in order: {"nodes": [...], "sources": [...], "code": [...]}."""
    from pt2kit.runtime.worker.fxmeta import user_frame

    maps = _load(mappings)
    traces = _load(stacks)
    to_post: dict[str, list[str]] = {}
    for key, value in maps.items():
        if key.endswith("CodeToPost") and isinstance(value, dict):  # cppCodeToPost, tritonCodeToPost, ...
            to_post.update(value)
    post_to_pre = maps.get("postToPre") or {}
    keys = set(to_post) | set(traces)
    by_name: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for key in keys:
        m = _HANDLE.match(key)
        name, handle = (m.group(1), int(m.group(2))) if m else (key, 0)
        nodes: list[str] = []
        for post in to_post.get(key, []):
            for pre in post_to_pre.get(post, [post]):
                if pre not in nodes:
                    nodes.append(pre)
        sources: list[str] = []
        code: list[str] = []
        for trace in traces.get(key, []) or []:
            where, text = user_frame(trace)
            if where and where not in sources:
                sources.append(where)
                code.append(text or "")
        order = sorted(range(len(sources)), key=lambda i: _line_key(sources[i]))
        entry = {"nodes": nodes, "sources": [sources[i] for i in order], "code": [code[i] for i in order]}
        by_name.setdefault(_norm(name), []).append((handle, entry))
    return {name: [e for _, e in sorted(entries, key=lambda x: x[0])] for name, entries in by_name.items()}


def _norm(name: str) -> str:
    return name.removeprefix("torch.ops.").removeprefix("extern_kernels.")


def _line_key(source: str) -> tuple[str, int]:
    path, _, line = source.rpartition(":")
    return path, int(line) if line.isdigit() else 0


def for_launch(prov: dict[str, list[dict[str, Any]]], kernel: str, nth: int) -> dict[str, Any] | None:
    """The provenance of the ``nth`` launch (from 0) of ``kernel``, when Inductor gave one."""
    entries = prov.get(_norm(kernel))
    if not entries:
        return None
    return entries[min(nth, len(entries) - 1)]
