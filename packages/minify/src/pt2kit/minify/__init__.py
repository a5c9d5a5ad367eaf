"""minify: the smallest standalone repro of a torch.compile failure (compile error, crash, accuracy,
NaN/Inf, constraint violation), crash-safe and fast.

Public: the ``minify`` command only; no library API (every module here is private and may change in
any release). A repro.py embeds by source only the code its check reaches (``parent/embed.py``) of the judge's
``answer.py``, ``verdicts.py``, ``harness.py`` and ``loading.py``, as ``judge/plan.py`` picks it. minify builds on runtime (the
Session, capture, HOP descent) and on fxcheck's public names (resolve_profile, parse_dtypes,
graph_view, run_checks) for a violation's checks.
"""

__version__ = "0.23.0"

__all__ = ["__version__"]
