"""benchrun's test helpers, a module of their own (not conftest.py): the test command runs every package's tests
in one pytest, where each folder's conftest.py is a different module and ``from conftest import`` would find the
first one on sys.path, not this folder's."""

from pathlib import Path

MODELS = Path(__file__).parent / "models"
