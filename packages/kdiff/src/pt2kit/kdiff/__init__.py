"""kdiff: numerical diff of a compiled model against a reference, down to the first diverging op.

Library use: ``pt2kit.kdiff.metrics.compare(ref, test, atol=..., rtol=...)`` for one tensor pair
(one pass; Triton on CUDA) and ``pt2kit.kdiff.localize.localize(...)`` for the first diverging
aten node. Importing this package does not import torch.
"""

__version__ = "1.2.0"
