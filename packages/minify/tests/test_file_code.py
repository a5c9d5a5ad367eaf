"""A model file whose top level installs code into the compiler: Inductor's post_grad_custom_post_pass, an entry
of its decomposition table. kdiff loads the file and sees the bug; minify's candidates, judged under the config
its search carries, and the repro ran without it: "the accuracy failure (accuracy) does not reproduce on the
captured graph(s)", exit 3, nothing to bisect. Now what the file installed travels as a script's pass handed
over with --config does, ("pt2kit:code", FILE, NAME) in CONFIG, loaded from the file where it is applied: the
repro fails alone, passes without it, and the bisection names the stage PyTorch's bisector names on the scripts
(tests/bisect/post_grad_pass.py, wrong_decomp.py). Code no name reaches is one line and exit 2."""

from __future__ import annotations

from mntest import MODELS, run_repro, switch_off

CODE = "pt2kit:code"


def test_a_model_file_that_installs_a_post_grad_pass_gives_a_repro_and_the_post_grad_stage(minify, tmp_path):
    out, file = tmp_path / "repro.py", MODELS / "file_pass.py"
    r = minify(str(file), "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["ops"] == ["aten.add.Tensor"] and rep["reproduced"] == 3, rep
    # written once a fresh run failed, before the bisection ended: a run stopped in it keeps the repro
    assert f"file_pass.py: wrote {out}, verified; bisecting its stage" in r.stderr, r.stderr
    assert rep["config"] == {"post_grad_custom_post_pass": repr((CODE, str(file), "corrupt"))}
    (b,) = r.kind("bisect")
    assert (b["backend"], b["subsystem"], b["what"], b["found"]) == (
        "inductor", "post_grad_passes", "post_grad_custom_post_pass", True), b
    # the short form (issue 58): the pass loaded from its file in main, before the check (short.code_config)
    text = out.read_text()
    assert "def code_config(" in text and "CONFIG = {'torch._inductor.config': {'post_grad_custom_post_pass': (" \
        "'pt2kit:code', " in text and len(text.splitlines()) <= 150, len(text.splitlines())
    assert "code_config(CONFIG)," in text
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: accuracy"), p.stdout + p.stderr
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    assert run_repro(out).returncode == 0


def test_a_model_file_that_installs_a_decomposition_gives_a_repro_and_the_decomposition_stage(minify, tmp_path):
    out, file = tmp_path / "repro.py", MODELS / "file_decomp.py"
    r = minify(str(file), "-o", str(out))
    assert r.code == 1, r.stderr
    (rep,) = r.kind("repro")
    assert rep["ops"] == ["aten.silu.default"] and rep["reproduced"] == 3, rep
    assert rep["config"] == {"decomposition:aten.silu.default": repr((CODE, str(file), "wrong_silu"))}
    (b,) = r.kind("bisect")
    assert (b["backend"], b["subsystem"], b["what"], b["found"]) == (
        "aot_eager_decomp_partition", "decomposition", "aten.silu.default", True), b
    p = run_repro(out)
    assert p.returncode == 1 and p.stdout.startswith("repro: the bug is present: accuracy"), p.stdout + p.stderr
    switch_off(out, r"CONFIG = .*", "CONFIG = {}")
    assert run_repro(out).returncode == 0


def test_a_pass_no_name_reaches_is_one_line_with_what_to_do(minify, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import torch\nimport torch._inductor.config\nfrom file_pass import corrupt, model, example_inputs\n"
                 "torch._inductor.config.post_grad_custom_post_pass = lambda graph: corrupt(graph)\n")
    (tmp_path / "file_pass.py").write_text((MODELS / "file_pass.py").read_text())
    r = minify(str(f), "-o", str(tmp_path / "repro.py"))
    assert r.code == 2, r.stderr
    assert r.stderr.splitlines()[-1] == (
        "minify: error: m.py: its top level sets inductor.post_grad_custom_post_pass to <lambda>, code no "
        "module-level name reaches, which minify cannot carry into its candidates and repro: bind it to a name in a "
        "file (NAME = ...), which minify then carries, or give --config post_grad_custom_post_pass=FILE.py:NAME")
    assert not (tmp_path / "repro.py").exists()


def test_a_carried_decomposition_is_in_inductors_table_inside_the_config_only():
    import torch
    import torch._functorch.config as functorch
    import torch._inductor.config as inductor
    from torch._inductor.decomposition import decompositions

    from pt2kit.minify.judge import loading

    silu, before, caches = torch.ops.aten.silu.default, decompositions.get(torch.ops.aten.silu.default), (
        inductor.fx_graph_cache, functorch.enable_autograd_cache)

    def wrong(x):
        return x

    with loading.apply_decomposing_config({loading.DECOMPOSITIONS: {"aten.silu.default": wrong}}):
        # the table is in no cache's key: a graph compiled before without it must not be handed back
        assert decompositions[silu] is wrong and not inductor.fx_graph_cache and not functorch.enable_autograd_cache
    assert decompositions.get(silu) is before and (inductor.fx_graph_cache, functorch.enable_autograd_cache) == caches
