"""pt2kit-runtime: what the pt2kit tools share. Importing it never imports torch."""

from .common.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES_HELP,
    EXIT_CRASH,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    ModelFileError,
    UsageError,
)

__version__ = "3.3.0"

__all__ = [
    "EXIT_BROKEN_PIPE", "EXIT_CODES_HELP", "EXIT_CRASH", "EXIT_FINDINGS", "EXIT_INTERRUPTED",
    "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE", "ModelFileError", "UsageError",
]
