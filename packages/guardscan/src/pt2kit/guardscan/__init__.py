"""guardscan: graph breaks, guards and recompilations of torch.compile, with the user's lines and advice.

Library use: ``pt2kit.guardscan.analyze.analyze(trace)`` turns structured-trace events (from a
``TORCH_TRACE`` directory, :func:`pt2kit.guardscan.tracelog.read_trace`, or a live run) into
findings; ``pt2kit.guardscan.scan.scan(model, inputs, variants)`` runs a model and does both.
Importing this package does not import torch.
"""

__version__ = "1.2.0"
