"""What kdiff says on stderr, read back from the records its worker writes."""

from __future__ import annotations

from typing import Any

import msgspec

from pt2kit.schema import as_float


class Narrator:
    def __init__(self, say: Any, label: str) -> None:
        self.say = say
        self.label = label
        self.failing: list[dict[str, Any]] = []

    def record(self, raw: bytes) -> None:
        if raw.startswith(b'{"kind":"diff"'):
            d = msgspec.json.decode(raw)
            if d["passed"] and (d.get("note") or "").startswith("the reference holds"):
                self.say(f"{self.label}: {d['output']}: {d['note']}")
            elif d.get("rule") == "tie":
                self.say(f"{self.label}: TIE {d['output']}: {d.get('note')}")
            elif d.get("rule") == "precision":
                self.say(f"{self.label}: PRECISION {d['output']}: {d.get('note')}")
            elif not d["passed"]:
                self.failing.append(d)
                m = d.get("metrics") or {}
                worst = f" at {d['worst_index']}: ref {d.get('worst_ref')} test {d.get('worst_test')}" \
                    if d.get("worst_index") is not None else ""
                detail = f"max abs {as_float(m.get('max_abs')):.4g}, {m.get('mismatches')} mismatched{worst}" \
                    if m else d.get("note", "")
                self.say(f"{self.label}: FAIL {d['output']} ({d['test']} vs {d['ref']}): {detail}")
        elif raw.startswith(b'{"kind":"divergence"'):
            v = msgspec.json.decode(raw)
            where = f" at {v['source']}" if v.get("source") else ""
            inside = f" in {v['subgraph']}" if v.get("subgraph") else ""
            self.say(f"{self.label}: first divergence: {v.get('op') or v['node']} (node {v['node']}{inside}){where}"
                     + (f"  {v['code']}" if v.get("code") else ""))

    def summary(self, value: dict[str, Any], notes: dict[str, Any], test: str, ref: str) -> None:
        for key in ("fp64", "narrowed", "hops", "localize"):
            if key in notes:
                self.say(f"{self.label}: {notes[key]}")
        if "precision_own" in notes:
            self.say(f"{self.label}: the model turned on {notes['precision_own']}: judged with it off, as PyTorch's "
                     "accuracy harness judges (--precision as-configured keeps it)")
        if value.get("frozen"):
            self.say(f"{self.label}: {value['frozen']} frozen parameters: no gradient")
        if value.get("no_grad"):
            names = value["no_grad"]
            self.say(f"{self.label}: {len(names)} leaves got no gradient on either side, not compared: "
                     + ", ".join(names[:5]) + (", ..." if len(names) > 5 else ""))
        n = value["diffs"]
        extra = [f"{value['by_fp64']} within float64 noise"] if value.get("by_fp64") else []
        extra += [f"{value['ties']} after a near-tie"] if value.get("ties") else []
        extra += [f"{value['precision']} only with the model's precision modes"] if value.get("precision") else []
        extra += [notes["precision"] if "precision" in notes else "PyTorch's accuracy-harness precision: TF32 off"]
        self.say(f"{self.label}: {n - len(self.failing)} of {n} leaves pass ({test} vs {ref}"
                 + "".join(f"; {e}" for e in extra) + ")")
