"""Numeric flags: the range each may take, checked once for every tool.

A value the machine cannot serve is bad usage (one line, exit 2) before any work starts; it is never
silently replaced by a default, and never found out mid-run as a crash or a run that does not end.

Guarantees:

* :func:`check_finite`: NaN, infinities and negatives (zero too, when ``positive``) are refused, and
  values past ``at_most`` (seconds past :data:`MAX_SECONDS`, for instance, where Python's timers
  overflow long before).
* :func:`check_range`: an integer flag within ``[lo, hi]``, the message naming the range.
* :func:`check_seed`: torch.manual_seed's own range, ``-2**63`` to ``2**64 - 1`` (past it torch
  raises "Overflow when unpacking long long", after the model has loaded).
* :func:`worker_cap`: how many worker processes this machine serves (its usable CPUs and its
  available memory at ``per_worker`` bytes each); a caller caps a larger request and says so.

Imports nothing heavy: it runs before ``--help``'s promise of no torch.
"""

from __future__ import annotations

import math
import os
from typing import TypeVar

from .errors import UsageError

T = TypeVar("T")

SEED_MIN, SEED_MAX = -(2**63), 2**64 - 1
MAX_SECONDS = 7 * 24 * 3600  # a week: no compile, run or sweep step waits longer


def check_finite(name: str, value: float | None, *, positive: bool = False,
                 at_most: float | None = None) -> float | None:
    """A numeric flag's value, or UsageError: NaN, infinities and negatives (zero too, when
    ``positive``; anything past ``at_most``) are never silently replaced by a default."""
    if value is None:
        return None
    if not math.isfinite(value) or value < 0 or (positive and value == 0) or (at_most is not None and value > at_most):
        want = "a finite number > 0" if positive else "a finite number >= 0"
        raise UsageError(f"{name} {value}: expected {want}" + (f" and <= {at_most:g}" if at_most is not None else ""))
    return value


def check_seconds(name: str, value: float | None) -> float | None:
    """A duration flag (``--timeout``): positive, finite and at most :data:`MAX_SECONDS`."""
    return check_finite(name, value, positive=True, at_most=MAX_SECONDS)


def check_range(name: str, value: int | None, lo: int, hi: int | None = None, what: str = "") -> int | None:
    """An integer flag within ``[lo, hi]`` (``hi`` None: no upper bound), or UsageError naming the range."""
    if value is None:
        return None
    if value < lo or (hi is not None and value > hi):
        span = f"from {lo} to {hi}" if hi is not None else f">= {lo}"
        raise UsageError(f"{name} {value}: expected {what + ' ' if what else ''}{span}")
    return value


def check_seed(name: str, value: int) -> int:
    """A seed torch.manual_seed takes."""
    if not SEED_MIN <= value <= SEED_MAX:
        raise UsageError(f"{name} {value}: expected a seed torch accepts, from -2**63 to 2**64-1")
    return value


def usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available_memory() -> int | None:
    """Bytes of memory available to new processes (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def worker_cap(per_worker: int) -> tuple[int, str]:
    """(the most worker processes this machine serves, why: its CPUs and memory in words)."""
    cpus = usable_cpus()
    mem = available_memory()
    cap, why = cpus, f"{cpus} usable CPU(s)"
    if mem is not None:
        by_mem = max(1, mem // per_worker)
        why += f", {mem / 2**30:.1f} GiB of memory available at about {per_worker / 2**30:g} GiB a worker"
        cap = min(cap, by_mem)
    return cap, why


def renamed(flag: str, value: T | None, old_flag: str, old: T | None) -> T | None:
    """A flag's value given under its name or its hidden old one (kdiff's --test, aotiprint's --mode);
    both given with different values is exit 2."""
    if value is not None and old is not None and value != old:
        raise UsageError(f"{old_flag} is {flag}'s old name: give one")
    return value if value is not None else old
