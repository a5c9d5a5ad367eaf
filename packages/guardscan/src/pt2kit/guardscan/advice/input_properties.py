"""input_properties: a tensor's dtype, device, rank or requires_grad changed between calls.

Why: these are never made dynamic; each combination is its own graph, guarded by ``TENSOR_MATCH``.
Mixed-precision inputs, a mask that is sometimes float and sometimes bool, or a tensor that
sometimes requires grad each double the compiles. Converting at the call site makes one graph.

Example: ``x`` first float32, then float16 -> ``x = x.to(torch.float32)`` before the compiled call.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Findings
from .base import AdviceItem, Rule, user_input

CHANGES = {
    "dtype": "{x} = {x}.to(torch.{e})  # one dtype at the compiled call",
    "requires_grad": "{x} = {x}.detach()  # or .requires_grad_(), the same at every call",
    "device": "{x} = {x}.to(device)  # one device at the compiled call",
    "rank": "{x} = {x}.reshape(...)  # one rank at the compiled call",
    "stride": "{x} = {x}.contiguous()  # one layout at the compiled call",
}
DTYPES = {"Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Double": "float64", "Long": "int64",
          "Int": "int32", "Bool": "bool"}


class InputProperties(Rule):
    name = "input_properties"

    def check(self, f: Findings) -> Iterator[AdviceItem]:
        seen: set[tuple[str, str]] = set()
        for r in f.recompiles:
            if r.kind not in CHANGES or r.tensor is None or (r.tensor, r.kind) in seen:
                continue
            seen.add((r.tensor, r.kind))
            x = user_input(f, r)
            e = (r.guard or "").rpartition("== ")[2].removeprefix("torch.")
            change = CHANGES[r.kind].format(x=x.code, e=DTYPES.get(e, e) or "float32")
            yield AdviceItem(self.name, f"the {r.kind} of {x.said} changed between calls ({r.trigger}); it is never "
                             "made dynamic, so each value compiles its own graph",
                             f"{change}, {x.before}" if r.called_from and not f.model_file else change, x.source)


INPUT_PROPERTIES = InputProperties()
