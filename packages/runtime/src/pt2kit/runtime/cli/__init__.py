"""``pt2kit cat``, ``pt2kit ls``, ``pt2kit gc`` (:mod:`pt2kit.runtime.__main__`): the stream's own utility,
reading streams as data. Torch-free, like the parent side."""
