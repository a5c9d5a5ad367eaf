"""Exceptions whose message is one line for the user, and the exit codes they map to."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_CRASH = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_TERMINATED = 143

EXIT_CODES_HELP = (
    "Exit codes: 0 clean; 1 findings; 2 bad usage or bad input (a newer schema included); "
    "3 the model, the compiler or the tool crashed (a crash record says where); "
    "130 interrupted (Ctrl-C); 141 broken pipe; 143 terminated (SIGTERM)."
)


class UsageError(Exception):
    """Bad usage or bad input: exit 2 with this one-line message."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwinds like Ctrl-C (the worker is stopped, temporary files swept), exit 143."""


class ModelFileError(UsageError):
    """A model file is missing, does not parse, or lacks `model`/`example_inputs`."""
