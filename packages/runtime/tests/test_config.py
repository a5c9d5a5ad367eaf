from __future__ import annotations

import pytest

from pt2kit.runtime.config import parse_config
from pt2kit.runtime.errors import UsageError


def test_parse_needs_key_and_value():
    assert parse_config(["a.b=1", "c= x "]) == {"a.b": "1", "c": "x"}
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        parse_config(["novalue"])


def test_apply_sets_and_restores_inductor_and_dynamo_settings():
    torch = pytest.importorskip("torch")
    import torch._dynamo.config as dc
    import torch._inductor.config as ic

    from pt2kit.runtime.config import apply_config

    assert torch
    before = ic.cpp.inject_relu_bug_TESTING_ONLY
    with apply_config({"cpp.inject_relu_bug_TESTING_ONLY": "accuracy", "dynamo.assume_static_by_default": "false",
                       "inductor.max_autotune": "1"}):
        assert ic.cpp.inject_relu_bug_TESTING_ONLY == "accuracy"
        assert dc.assume_static_by_default is False and ic.max_autotune is True
    assert ic.cpp.inject_relu_bug_TESTING_ONLY == before and dc.assume_static_by_default is True


def test_unknown_key_suggests_close_ones():
    pytest.importorskip("torch")
    from pt2kit.runtime.config import apply_config

    with pytest.raises(UsageError, match=r"no such setting.*did you mean cpp.inject_relu_bug_TESTING_ONLY"):
        apply_config({"cpp.inject_relu_bug_TESTING": "accuracy"})
    with pytest.raises(UsageError, match="expected a boolean"):
        apply_config({"max_autotune": "maybe"})


def test_config_keys_lists_dotted_names():
    pytest.importorskip("torch")
    import torch._inductor.config as ic

    from pt2kit.runtime.config import config_keys

    assert "cpp.inject_relu_bug_TESTING_ONLY" in config_keys(ic)
