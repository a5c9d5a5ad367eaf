"""A candidate that hangs is stopped once it runs far past what the pool's requests have taken, not at
--timeout (issue 57: a cut of pytorch#181688's graph, whose bug corrupts the heap, hung 300 s, then another,
and triage was killed before minify wrote the 3-op repro it had)."""

from __future__ import annotations

import time

from pt2kit.minify.parent import pool as pools
from pt2kit.minify.parent.pool import Pool

MODEL = '''
class Repro(torch.nn.Module):
    def forward(self, x):
        import time
        time.sleep({sleep})
        raise RuntimeError("the failure")
'''


def _payload(sleep: float) -> dict:
    return {"source": MODEL.format(sleep=sleep), "inputs": [("tensor", [2], [1], "float32", "cpu", None, None)],
            "failure": {"kind": "accuracy", "signature": "accuracy"}, "backend": "eager", "config": {},
            "dynamic": False, "seed": 0}


def test_a_hung_request_answers_timeout_at_the_cap_not_the_pools_timeout(monkeypatch):
    monkeypatch.delenv("PT2KIT_FORKSERVER", raising=False)  # minify's own zygote, never a test run's server
    monkeypatch.setattr(pools, "HANG_SLACK", 3.0)  # 60 s in use: a test's worth of seconds here
    pool = Pool(1, timeout=600)
    try:
        assert pool.limit() == 600  # nothing answered yet: the first run (the whole model) has the whole timeout
        (quick,) = pool.map("query", [_payload(0)])
        assert quick["t"] == "done" and "the failure" in quick["result"]["signature"], quick
        cap = pool.limit()
        assert cap is not None and cap < 60, cap
        began = time.monotonic()
        (hung,) = pool.map("query", [_payload(600)])
        took = time.monotonic() - began
        assert hung["t"] == "timeout" and cap <= took < cap + 10, (hung, cap, took)
        assert pool.ask("query", _payload(0))["t"] == "done"  # its worker replaced: the pool goes on
    finally:
        pool.close()
