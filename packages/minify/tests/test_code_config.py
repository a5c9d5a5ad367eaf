"""A pass handed to minify as --config HOOK=FILE.py:NAME reaches every candidate and the repro as the
code it is: named ("pt2kit:code", FILE, NAME) in the config the parent, the queries and the repro share
(a function's repr is no literal: before, minify's worker raised on it), loaded where it is applied."""

from __future__ import annotations

import torch._inductor.config as inductor

from pt2kit.minify import harness
from pt2kit.minify.work import _resolved_config, _typed


def test_a_pass_given_as_file_and_name_travels_by_name_and_is_the_function_where_applied(tmp_path):
    f = tmp_path / "planted.py"
    f.write_text("def corrupt(graph):\n    return None\n")
    config = _resolved_config({"post_grad_custom_post_pass": f"{f}:corrupt"})
    assert config == {"torch._inductor.config": {
        "post_grad_custom_post_pass": repr((harness.CODE, str(f), "corrupt"))}}
    with harness.apply_config(_typed(config)):
        hook = inductor.post_grad_custom_post_pass
        assert callable(hook) and hook.__name__ == "corrupt" and hook.__code__.co_filename == str(f)
    assert inductor.post_grad_custom_post_pass is None
