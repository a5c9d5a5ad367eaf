"""Kept for the tools released before runtime 2.9 (kdiff up to 2.4.0, minify up to 0.5.0 import it): these names
moved to :mod:`.aotgraphs` (``capture_forward`` is ``forward_graphs``, ``capture_training`` is
``training_graphs``); this module goes in runtime 3.0. Nothing here has to do with ``pt2kit capture``."""

import warnings

from .aotgraphs import TrainingGraphs, concrete, forward_node_of
from .aotgraphs import forward_graphs as capture_forward
from .aotgraphs import training_graphs as capture_training

__all__ = ["TrainingGraphs", "capture_forward", "capture_training", "concrete", "forward_node_of"]

warnings.warn("pt2kit.runtime.capture is pt2kit.runtime.aotgraphs since runtime 2.9", DeprecationWarning, stacklevel=2)
