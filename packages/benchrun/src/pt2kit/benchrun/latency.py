"""Latency statistics (a `Latency` record's fields) and the speedup's confidence interval, in plain
Python (no torch, no numpy). Statistics of a tensor are "stats" elsewhere in pt2kit; timing is latency.

Guarantees:

* Quantiles are linear interpolation between order statistics (numpy's default, ``statistics``'
  "inclusive" method), so p50 is the median the PyTorch harness reports.
* The speedup is median(eager) / median(backend), as in ``benchmarks/dynamo/common.py``. Its 95%
  interval is a percentile bootstrap: both sample sets are resampled with replacement,
  independently, ``BOOTSTRAP`` times, with a fixed seed, so the same samples give the same interval.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

BOOTSTRAP = 2000


def quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return math.nan
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summary(xs: Sequence[float]) -> dict[str, float | int]:
    """The fields of a ``Latency`` record (seconds)."""
    return {"n": len(xs), "mean": statistics.fmean(xs), "median": quantile(xs, 0.5), "min": min(xs), "max": max(xs),
            "std": statistics.pstdev(xs) if len(xs) > 1 else 0.0, "p10": quantile(xs, 0.1), "p90": quantile(xs, 0.9),
            "iqr": quantile(xs, 0.75) - quantile(xs, 0.25)}


def speedup_interval(eager: Sequence[float], test: Sequence[float], *, level: float = 0.95,
                     rounds: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float, float]:
    """(speedup, low, high): median(eager)/median(test) and its bootstrap interval."""
    point = quantile(eager, 0.5) / quantile(test, 0.5)
    rng = random.Random(seed)
    ne, nt = len(eager), len(test)
    ratios = []
    for _ in range(rounds):
        e = [eager[rng.randrange(ne)] for _ in range(ne)]
        t = [test[rng.randrange(nt)] for _ in range(nt)]
        ratios.append(quantile(e, 0.5) / quantile(t, 0.5))
    tail = (1 - level) / 2
    return point, quantile(ratios, tail), quantile(ratios, 1 - tail)
