"""The worker (child) side: what runs in ``python -m pt2kit.runtime.worker.main`` (or a process the fork
server forked), with torch. A parent module never imports one of these at module level."""
