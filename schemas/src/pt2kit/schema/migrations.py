"""Upgrades of records written with older schema majors.

``MIGRATIONS[n]`` takes the decoded JSON object of a major-``n`` record and returns the equivalent
major ``n + 1`` object (with ``v`` set to ``n + 1``). The reader chains them, so a record of any
shipped major reaches :data:`~pt2kit.schema.records.SCHEMA_MAJOR`. Major 1 is the first, so the table
is empty; when a field is removed or retyped, bump ``SCHEMA_MAJOR`` and add the step from the old
major here, with a test that feeds a line of the old major through ``read_stream`` (see
``tests/test_migrations.py`` for the pattern).

Lines are forwarded as they were read; only the decoded record a tool works on is upgraded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .records import SCHEMA_MAJOR

Migration = Callable[[dict[str, Any]], dict[str, Any]]

MIGRATIONS: dict[int, Migration] = {}


def oldest_readable() -> int:
    """The oldest major this package can upgrade from."""
    major = SCHEMA_MAJOR
    while major - 1 in MIGRATIONS:
        major -= 1
    return major


def upgrade(obj: dict[str, Any]) -> dict[str, Any]:
    """Apply every step from ``obj['v']`` up to the current major. Raises KeyError when a step is missing."""
    major = obj["v"]
    while major < SCHEMA_MAJOR:
        obj = MIGRATIONS[major](dict(obj))
        major += 1
        obj["v"] = major
    return obj
