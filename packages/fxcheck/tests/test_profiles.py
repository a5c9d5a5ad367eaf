from __future__ import annotations

import pytest

from pt2kit.fxcheck.job import ProfileFlags
from pt2kit.fxcheck.profiles import load_profile, parse_bytes, parse_dtypes, resolve, shipped_profiles
from pt2kit.runtime.common.errors import UsageError


def test_shipped_profiles_load():
    assert {"float32-only", "npu-bf16", "no-conv", "mock-peer"} <= set(shipped_profiles())
    for name in shipped_profiles():
        assert load_profile(name).name == name


def test_precedence_profile_then_mock_then_pt2kit_then_flags(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('align = 4\ndtypes = ["fp32"]\nstrict = false\n')
    env = {"MOCK_ALIGNMENT": "8", "MOCK_STRICT": "1", "MOCK_MAX_MEMORY": "1MiB"}
    p = resolve(str(f), ProfileFlags(), env)
    assert (p.align, p.strict, p.max_tensor_bytes, p.dtypes) == (8, True, 1 << 20, ["float32"])
    p = resolve(str(f), ProfileFlags(), {**env, "PT2KIT_ALIGN": "16"})
    assert p.align == 16
    p = resolve(str(f), ProfileFlags(align=32, strict=None), {**env, "PT2KIT_ALIGN": "16"})
    assert p.align == 32 and p.strict is True
    assert resolve(None, ProfileFlags(), {"PT2KIT_PROFILE": "no-conv"}).deny == ["aten.convolution", "aten.convolution_backward"]


def test_bad_values_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="MOCK_ALIGNMENT: expected an integer"):
        resolve(None, ProfileFlags(), {"MOCK_ALIGNMENT": "x"})
    f = tmp_path / "p.toml"
    f.write_text("dtypes = ['float32']\nallign = 16\n")
    with pytest.raises(UsageError, match="unknown field `allign`"):
        load_profile(str(f))
    assert parse_bytes("64MiB", "x") == 64 << 20 and parse_bytes("2k", "x") == 2048 and parse_bytes("100", "x") == 100
    assert parse_dtypes("bf16, torch.float32", "x") == ["bfloat16", "float32"]
