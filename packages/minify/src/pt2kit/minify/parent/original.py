"""minify's original run, parent side: the model's graphs and how it fails, asked of one warm worker
(:func:`..worker.work.original`), each message acted on as it comes (the stage said, the `model` record written,
the search ahead started on the first graph as soon as the graphs exist)."""

from __future__ import annotations

from typing import Any

import msgspec

from pt2kit.runtime.common.errors import UsageError

from .. import ir
from ..job import Job
from .ahead import Ahead
from .pool import Pool


def ask(pool: Pool, job: Job, stage: Any, on_model: Any, got: dict[str, Any], ahead: bool
              ) -> tuple[list[ir.Graph], dict[str, Any], dict[str, Any]]:
    """``got`` receives the graphs, and the search ahead when ``ahead``, as soon as they exist."""

    def on_message(m: dict[str, Any]) -> None:
        if m.get("t") == "stage":
            stage(m["stage"])
        elif m.get("t") == "phase":  # the compiled training step's forward returned: what dies now is the backward's
            got["phase"] = m["phase"]
        elif m.get("t") == "eager":  # eager raised: a signal the compiled run dies by next is the failure
            got["eager"] = m["raised"]
        elif m.get("t") == "model":
            on_model(m["fields"])
        elif m.get("t") == "graphs":
            got["graphs"] = msgspec.convert(m["graphs"], list[ir.Graph])
            got["config"] = m["config"]
            got["precision"] = m.get("precision")
            got["autocast"] = m.get("autocast") or []  # the model file's: every candidate runs under it
            # train mode: the bet is on a gradient, in the first backward graph
            first = ir.searched(got["graphs"], "backward" if job.mode == "train" else None, False)
            if ahead and first:
                got["early"] = Ahead(pool, job, first[0], got["config"], stage, got["precision"], got["autocast"])

    a = pool.ask("original", msgspec.to_builtins(job), on_message)
    graphs, config = got.get("graphs", []), got.get("config", {})
    if a["t"] == "raised":
        if a["type"] in ("UsageError", "ModelFileError"):
            raise UsageError(a["message"])
        return graphs, config, {"kind": "error", "why": f"{a['type']}: {a['message']}"}
    if a["t"] == "died":
        return graphs, config, {"kind": "crash", "signature": a["signal"], "detail": a["stderr"][-2000:],
                                "phase": got.get("phase"), **({"eager": got["eager"]} if "eager" in got else {})}
    if a["t"] == "timeout":
        return graphs, config, {"kind": "error", "why": "the original run timed out"}
    return graphs, config, a["result"]
