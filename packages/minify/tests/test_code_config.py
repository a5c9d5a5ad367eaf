"""A pass handed to minify as --config HOOK=FILE.py:NAME reaches every candidate and the repro as the
code it is: named ("pt2kit:code", FILE, NAME) in the config the parent, the queries and the repro share
(a function's repr is no literal: before, minify's worker raised on it), loaded where it is applied."""

from __future__ import annotations

from pathlib import Path

import torch
import torch._inductor.config as inductor

from pt2kit.minify.judge import loading
from pt2kit.minify.records import typed_config
from pt2kit.minify.worker.work import _resolved_config


def test_a_pass_given_as_file_and_name_travels_by_name_and_is_the_function_where_applied(tmp_path):
    f = tmp_path / "planted.py"
    f.write_text("def corrupt(graph):\n    return None\n")
    config = _resolved_config({"post_grad_custom_post_pass": f"{f}:corrupt"})
    assert config == {"torch._inductor.config": {
        "post_grad_custom_post_pass": repr((loading.CODE, str(f), "corrupt"))}}
    with loading.apply_code_config(typed_config(config)):
        hook = inductor.post_grad_custom_post_pass
        assert callable(hook) and hook.__name__ == "corrupt" and hook.__code__.co_filename == str(f)
    assert inductor.post_grad_custom_post_pass is None


BISECT = Path(__file__).resolve().parents[3] / "tests" / "bisect"


def test_a_pass_file_that_sets_the_pass_at_its_top_level_leaves_it_off_outside_the_config():
    # tests/bisect/post_grad_pass.py sets torch._inductor.config.post_grad_custom_post_pass = corrupt at module
    # level; loading it for --config post_grad_custom_post_pass=FILE:corrupt left the pass on in the warm worker,
    # so a candidate without the setting failed all the same, the search dropped it, and the repro (CONFIG {})
    # passed: minify exited 3
    script = str(BISECT / "post_grad_pass.py")
    config = _resolved_config({"post_grad_custom_post_pass": f"{script}:corrupt"})
    assert inductor.post_grad_custom_post_pass is None
    with loading.apply_code_config(typed_config(config)):
        assert inductor.post_grad_custom_post_pass.__name__ == "corrupt"
    assert inductor.post_grad_custom_post_pass is None


def test_a_backend_file_that_installs_a_decomposition_at_its_top_level_leaves_inductors_table_as_it_was():
    from torch._inductor.decomposition import decompositions

    silu = torch.ops.aten.silu.default
    before = decompositions.get(silu)
    backend = loading.load_file_attr(str(BISECT / "wrong_decomp.py"), "inductor_with_wrong_silu", "backend")
    assert callable(backend) and decompositions.get(silu) is before
