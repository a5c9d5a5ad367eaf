"""pt2kit-triage: ``pt2kit triage -- python train.py`` runs the script under ``pt2kit capture`` and its
records through guardscan, kdiff, minify and reportgen, each as the command it is, and leaves one folder:
the page, the repros, a stream per step and ``bug-report.md``.

No library API: ``__all__`` is the version alone.
"""

__version__ = "0.5.16"

__all__ = ["__version__"]
