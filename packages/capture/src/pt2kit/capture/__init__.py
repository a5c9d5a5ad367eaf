"""pt2kit-capture: run the user's own command (``python train.py``, ``python -m pkg``, ``torchrun ...``)
unmodified, and write a `model` record for every graph torch.compile hands a backend in it.

No library API yet: ``__all__`` is the version alone.
"""

__version__ = "0.17.4"

__all__ = ["__version__"]
