"""What guardscan says on stderr, read back from the records it writes (live runs and traces alike)."""

from __future__ import annotations

from typing import Any

import msgspec


class Narrator:
    def __init__(self, say: Any, label: str) -> None:
        self.say = say
        self.label = label

    def record(self, raw: bytes) -> None:
        head = raw[:40]
        if b'"kind":"graph_break"' in head:
            b = msgspec.json.decode(raw)
            code = f"  {b['code']}" if b.get("code") else ""
            gb = f" [{b['gb_id']}]" if b.get("gb_id") else ""
            self.say(f"{self.label}: graph break at {b.get('source') or '?'}{code}: {b['reason']}{gb}")
        elif b'"kind":"recompile"' in head:
            r = msgspec.json.decode(raw)
            what = "expected (automatic dynamic shapes)" if r.get("expected") else "recompiled"
            if not r.get("compiled", True):
                what = "recompile limit hit, ran eagerly"
            at = f" at {r['source']}" if r.get("source") else ""
            trig = f" on {r['trigger']}" if r.get("trigger") else ""
            self.say(f"{self.label}: {r['frame']} {what}{trig}: guard {r.get('guard') or r['reason']} failed{at}")
        elif b'"kind":"variant"' in head:
            v = msgspec.json.decode(raw)
            frames = f" ({', '.join(v['frames'])})" if v.get("frames") else ""
            err = f": {v['error']}" if v.get("error") else ""
            self.say(f"{self.label}: call with {v['name']}: {v['outcome']}{frames}{err}")
        elif b'"kind":"advice"' in head:
            a = msgspec.json.decode(raw)
            change = f"\n    {a['change']}" if a.get("change") else ""
            self.say(f"{self.label}: advice [{a['rule']}]: {a['message']}{change}")

    def summary(self, counts: dict[str, int]) -> None:
        expected = counts["recompiles"] - counts["unexpected"]
        totals = ""
        if counts.get("all_graphs"):
            why = f": {counts['why_counts']}" if counts.get("why_counts") else ""
            totals = (f" (as torch._dynamo.explain counts the first call: {counts['all_graphs']} graph(s), "
                      f"{counts['all_breaks']} break(s){why})")
        self.say(f"{self.label}: {counts['graphs']} distinct graph(s), {counts['breaks']} distinct graph break(s)"
                 f"{totals}, {counts['unexpected']} recompile(s)" + (f" (+{expected} expected)" if expected else "")
                 + f", {counts['guards']} guards")
