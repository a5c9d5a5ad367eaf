"""benchrun: eager vs compiled benchmarks a performance engineer can trust.

Public: the ``benchrun`` command only (no library API); ``zoo/`` holds the model files
``benchrun --zoo`` lists.
"""

__version__ = "0.4.7"

__all__ = ["__version__"]
