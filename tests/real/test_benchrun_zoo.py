"""benchrun on its zoo's BERT-base file (transformers, keyword inputs, an attention mask), as a new user
runs it on a CPU: it runs, its accuracy status and graph counts are PyTorch's own answers.

The file runs with 1 of BERT-base's 12 layers (its text, one argument added): every op, shape, input and
graph break of BERT-base, a twelfth of its compile and eager time (2 layers: 124 s in CI under load). The full-size
model runs in benchmarks/bench_benchrun.py on the GPU machine, and `benchrun --zoo`'s test checks the
zoo's files exist."""

from __future__ import annotations


def test_bert_base_from_the_zoo_matches_explain_and_same(tool, tmp_path_factory):
    import torch

    from pt2kit.benchrun.zoo import resolve
    from pt2kit.runtime.common.modelfile import load_model

    text = open(resolve("zoo:bert_base")).read()
    assert text.count("BertConfig()") == 1, "the zoo's bert_base.py no longer builds BertConfig(): update this test"
    path = tmp_path_factory.mktemp("zoo") / "bert_base.py"
    path.write_text(text.replace("BertConfig()", "BertConfig(num_hidden_layers=1)"))
    r = tool("benchrun", str(path), "--repeat", "3", "--warmup", "1")  # 1 warm-up call a side, not 5: none is read
    assert r.code == 0, r.stderr[-3000:]
    (b,) = r.kind("bench")
    assert b["model"] == "bert_base.py" and b["backend"] == "inductor" and b["accuracy"] == "pass"
    assert b["latency"]["n"] == b["eager"]["n"] == 3 and b["speedup_lo"] <= b["speedup"] <= b["speedup_hi"]
    cold, warm = b["compile_cold"], b["compile_warm"]
    assert warm["cache_hits"] >= 1 and warm["total_s"] < cold["total_s"]
    (m,) = r.kind("model")
    assert m["kwargs"] and [i["name"] for i in m["inputs"]] == ["inputs['input_ids']", "inputs['attention_mask']"]
    loaded = load_model(str(path))
    assert len(loaded.model.encoder.layer) == 1 and loaded.model.config.hidden_size == 768
    with torch.no_grad():
        explained = torch._dynamo.explain(loaded.model)(**loaded.inputs)
        torch._dynamo.reset()
        eager = loaded.call()
        compiled = loaded.call(torch.compile(loaded.model))
    assert (b["graphs"], b["breaks"]) == (explained.graph_count, explained.graph_break_count)
    assert torch._dynamo.utils.same(eager.last_hidden_state, compiled.last_hidden_state)
