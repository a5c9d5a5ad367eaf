from __future__ import annotations

import math

import msgspec
import pytest

from pt2kit.schema import SCHEMA_MAJOR, Diff, Metrics, Violation, as_float, decode, encode
from pt2kit.schema.records import KINDS, RECORD_TYPES, num


def test_every_kind_design_md_lists_is_present():
    for kind in ["header", "model", "graph", "violation", "diff", "divergence", "graph_break", "guard",
                 "recompile", "kernel", "crash", "repro", "bench", "report", "error"]:
        assert kind in KINDS


def test_violation_roundtrip_keeps_every_field_and_leaves_defaults_out():
    v = Violation(v=SCHEMA_MAJOR, run="r1", constraint="dtype", message="float64 not allowed", phase="forward",
                  node="addmm", op="aten.addmm.default", dtype="float64", shape=[10, 4], source="m.py:7",
                  module="fc1")
    raw = encode(v)
    assert raw.startswith(b'{"kind":"violation","v":1,"run":"r1",')
    assert b'"graph"' not in raw  # default left out
    assert decode(raw) == v


def test_v_and_run_are_required():
    with pytest.raises(TypeError):
        Violation(constraint="x", message="m", phase="forward")  # type: ignore[call-arg]


def test_non_finite_numbers_survive_json():
    d = Diff(v=1, run="r", output="out", ref="eager", test="inductor", atol=0, rtol=0, passed=False,
             worst_ref=num(float("nan")), worst_test=num(float("-inf")),
             metrics=Metrics(numel=1, max_abs=num(math.inf), mean_abs=1.0, max_rel=num(math.inf), rmse=1.0,
                             mismatches=1, mismatch_share=1.0))
    back = decode(encode(d))
    assert math.isnan(as_float(back.worst_ref)) and as_float(back.worst_test) == -math.inf
    assert as_float(back.metrics.max_abs) == math.inf
    assert num(1.5) == 1.5 and num(None) is None


def test_tags_are_unique_and_match_kinds_table():
    tags = [t.__struct_config__.tag for t in RECORD_TYPES]
    assert len(tags) == len(set(tags))
    assert all(not t.__struct_config__.forbid_unknown_fields for t in RECORD_TYPES)


def test_unknown_fields_are_ignored_for_forward_compatibility():
    raw = b'{"kind":"error","v":1,"run":"r","message":"m","exit_code":2,"added_in_1_5":{"x":1}}'
    assert decode(raw).message == "m"
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"kind":"error","v":1,"run":"r"}', type=KINDS["error"])


def test_profile_from_toml_and_typos_are_errors():
    from pt2kit.schema.profile import ProfileError, profile_from_toml

    p = profile_from_toml('name = "npu"\ndtypes = ["float32"]\nalign = 16\ndeny = ["aten.convolution"]\n')
    assert p.align == 16 and p.dtypes == ["float32"] and p.align_min_size == 2 and not p.strict
    with pytest.raises(ProfileError, match=r"^p.toml: Object contains unknown field `allign`"):
        profile_from_toml("allign = 16\n", "p.toml")
    with pytest.raises(ProfileError, match=r"^p.toml: Expected `int | null`, got `str` - at `\$.align`"):
        profile_from_toml('align = "16"\n', "p.toml")
    with pytest.raises(ProfileError, match=r"^p.toml: not TOML"):
        profile_from_toml("align = = 3", "p.toml")
