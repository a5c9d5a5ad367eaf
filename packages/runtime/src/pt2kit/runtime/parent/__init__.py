"""The tool's own process (the parent): torch-free. Nothing here imports torch at module level, nor a
module of :mod:`pt2kit.runtime.worker` (tests/test_import_graph.py checks it)."""
