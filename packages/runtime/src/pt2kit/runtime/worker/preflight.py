"""The options a tool's parent cannot check without torch, checked in a worker before the tool reads a
stream or says it runs anything (:func:`pt2kit.runtime.parent.preflight.preflight` runs it): a backend
name torch registers, the code a ``--backend`` names (loaded, as the worker that runs a model will), a
``--device`` torch knows here, ``--config`` keys and values. A bad one is its one line and exit 2.
"""

from __future__ import annotations

from typing import Any


def check(payload: dict[str, Any], chan: Any) -> None:
    """UsageError (its one line) for the first of ``payload``'s backend, device and config that is wrong."""
    from ..common.backends import check_registered, is_code
    from ..common.config import resolve
    from ..common.modelfile import check_device
    from ..common.pyfile import backend_callable

    chan.stage("check the options")
    if payload.get("config"):
        resolve(payload["config"])
    if payload.get("device"):
        check_device(payload["device"])
    backend = payload.get("backend")
    if backend and is_code(backend):
        backend_callable(backend, "--backend")
    elif backend:
        check_registered(backend)
