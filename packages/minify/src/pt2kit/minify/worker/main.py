"""One warm worker's request loop: ``python -m pt2kit.minify.worker.main`` (or a fork of the zygote) answers
requests on stdin until stdin closes (the protocol: :mod:`..parent.pool`). A leaf: the pool starts it, the
zygote forks it, and it imports neither.

Guarantees: nothing a model or compiler prints reaches the protocol (the worker's fd 1 points at
stderr); each request starts from the compiler state the one before it started from (its settings and
Inductor's decomposition table put back: pt2kit_portable's kept_compiler_state), so a backend of the
user's that installs a decomposition when called, or a candidate's own settings, reach no later
candidate; a request that raises is answered ``raised`` and the worker goes on; a worker whose CUDA
context a query left dead answers, then exits, so the next question goes to a fresh one. Not
guaranteed: an answer to a request during which the process died (the pool says how it died).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import msgspec

THREADS = "PT2KIT_MINIFY_COMPILE_THREADS"  # a worker's share of the cores for Inductor's compilers


def main() -> int:
    """The worker loop."""
    proto = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # prints go to stderr; the protocol has its own descriptor
    sys.stdout = sys.stderr
    import faulthandler

    faulthandler.enable()
    threads = os.environ.pop(THREADS, None)
    if threads:
        from .torchapi import set_compile_threads

        set_compile_threads(int(threads))
    from .bisectwork import HANDLERS as BISECTING
    from .work import HANDLERS

    handlers = {**HANDLERS, **BISECTING}

    from pt2kit.runtime.common.caches import CacheUse
    from pt2kit.runtime.shims.torchapi import counting_cudagraphs_across_resets
    from pt2kit_portable import kept_compiler_state

    enc = msgspec.json.Encoder()

    def send(msg: dict[str, Any]) -> None:
        proto.write(enc.encode(msg) + b"\n")

    for raw in sys.stdin.buffer:
        req = msgspec.json.decode(raw)
        start = time.monotonic()
        try:
            # what its compiles read back of the script's caches (the parent sums them: Pool.caches); a candidate
            # resets Dynamo after its run, emptying the CUDA graph trees: what they held is counted first
            with kept_compiler_state(), counting_cudagraphs_across_resets(), CacheUse({}) as used:
                result = handlers[req["op"]](req["payload"], send)
            if _cudagraphs_dropped(req["payload"]):
                used.compiled_without_cudagraphs()
            send({"t": "done", "result": result, "s": time.monotonic() - start, "caches": used.counts()})
        except Exception as e:
            send({"t": "raised", "type": type(e).__name__, "message": str(e)[:4000],
                  "usage": getattr(e, "usage", False)})
        if _cuda_broken():
            return 0  # the answer stands; the parent forks a fresh worker for the next question
    return 0


def _cudagraphs_dropped(payload: Any) -> bool:
    """Whether a request's candidate runs under a config without ``triton.cudagraphs`` (the config step dropped the
    script's mode; a request with no config runs under the script's)."""
    from pt2kit.runtime.common.caches import modes_in

    config = payload.get("config") if isinstance(payload, dict) else None
    return isinstance(config, dict) and "triton.cudagraphs" not in modes_in(config)


def _cuda_broken() -> bool:
    """Whether this process's CUDA context is dead (a device-side assert, an illegal address: every
    later CUDA call would fail the same way, whatever the candidate)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return False
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).cpu()
    except Exception:
        return True
    return False


if __name__ == "__main__":
    raise SystemExit(main())
