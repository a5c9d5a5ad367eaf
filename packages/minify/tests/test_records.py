"""Which failure a stream record asks minify to keep."""

import msgspec

from pt2kit.minify.records import wanted
from pt2kit.schema import Diff, Violation

RUN = {"v": 1, "run": "20261123T000000Z-abcdef012345", "model": "m.py"}


def _diff(**kw):
    return msgspec.convert({**RUN, "kind": "diff", "output": "out", "ref": "eager", "test": "inductor", "atol": 1e-5,
                            "rtol": 1e-5, "passed": False, **kw}, Diff)


def _violation(**kw):
    return msgspec.convert({**RUN, "kind": "violation", "phase": "forward", "op": "aten.mm.default", **kw}, Violation)


def test_a_failing_diff_brings_its_reference_and_a_passing_one_asks_nothing():
    assert wanted(_diff(ref="eager64")) == {"kind": "accuracy", "ref": "eager64"}
    assert wanted(_diff()) == {"kind": "accuracy", "ref": "eager"}
    assert wanted(_diff(passed=True)) is None


def test_an_alignment_violation_brings_its_tile_and_unchecked_rules_are_left():
    got = wanted(_violation(constraint="align", message="aten.mm.default: dim 0 of size 10 is not a multiple of 16"))
    assert got == {"kind": "violation", "constraint": "align", "op": "aten.mm.default", "dtype": None, "align": 16}
    symbolic = "aten.mm.default: dim 0 is symbolic (s0), so alignment to 16 cannot be verified; its example size 10 " \
               "is not a multiple"
    assert wanted(_violation(constraint="align", message=symbolic)) is None  # no size a repro could hold
    assert wanted(_violation(constraint="contiguous", message="not contiguous")) is None
    assert wanted(_violation(constraint="deny", message="denied", phase="backward")) is None
    assert wanted(_violation(constraint="deny", message="denied"))["op"] == "aten.mm.default"
