"""Both sides: imported by the parent and by the worker. Plain data and text: nothing here imports torch at
module level, nor a module of :mod:`pt2kit.runtime.worker` (tests/test_import_graph.py checks it)."""
