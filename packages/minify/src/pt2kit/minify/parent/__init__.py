"""minify's parent side, torch-free: the drive (each model, its original run asked of a worker), the search
over candidates, the repro written, verified and bisected, and the pool of warm workers it asks. Nothing
here imports torch at module level (tests/test_import_graph.py checks it); the workers hold torch."""
