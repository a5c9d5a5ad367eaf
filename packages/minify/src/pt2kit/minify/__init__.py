"""minify: the smallest standalone repro of a torch.compile failure (compile error, crash, accuracy,
NaN/Inf, constraint violation), crash-safe and fast.

Public: the ``minify`` command only. ``harness.py`` is the code every repro.py embeds.
"""

__version__ = "0.1.0"

__all__: list[str] = []
