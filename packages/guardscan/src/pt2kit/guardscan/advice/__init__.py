"""The advice guardscan gives, registered in one place: add a module, then add it here."""

from __future__ import annotations

from ..findings import Findings
from .base import AdviceItem, Rule
from .dynamic_output_shapes import DYNAMIC_OUTPUT_SHAPES
from .graph_break import GRAPH_BREAK
from .input_properties import INPUT_PROPERTIES
from .mark_dynamic import MARK_DYNAMIC
from .move_item import MOVE_ITEM
from .recompile_limit import RECOMPILE_LIMIT
from .recompile_raised import RECOMPILE_RAISED
from .scalar_outputs import SCALAR_OUTPUTS
from .shape_branch import SHAPE_BRANCH

RULES: tuple[Rule, ...] = (SCALAR_OUTPUTS, MOVE_ITEM, DYNAMIC_OUTPUT_SHAPES, GRAPH_BREAK, MARK_DYNAMIC,
                           SHAPE_BRANCH, INPUT_PROPERTIES, RECOMPILE_LIMIT, RECOMPILE_RAISED)


def advise(f: Findings) -> list[AdviceItem]:
    out: list[AdviceItem] = []
    for rule in RULES:
        out.extend(rule.check(f))
    return out


__all__ = ["RULES", "AdviceItem", "Rule", "advise"]
