"""Helpers the fxcheck tests share (a uniquely named module: the repo's test suites run together)."""

from __future__ import annotations

from pathlib import Path

MODELS = Path(__file__).parent / "models"


def model(name: str) -> str:
    return str(MODELS / name)
