"""The README's outcomes table, held: each tool run on one model of each outcome gives the exit code
the table's column for it says, and the line that names the outcome (tests/models/outcomes/).

The expected codes are read from the README's table itself, so the table and the tools cannot part.
Outcomes a tool cannot give are `—` there and not run. Runs are one tool process each, so the module
is kept to the runs that tell outcomes apart: torch.compile backends that need no C++ build
(aot_eager, the TESTING_ONLY ones) wherever the tool takes one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pt2kit.testkit import run

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "tests" / "models" / "outcomes"
OUTCOMES = {"pass": "pass", "fail": "fail", "nothing compiled": "nothing", "the model's own failure": "own",
            "the compiler crashed": "crash", "cannot judge": "cannot"}
NOTHING = "nothing compiled: Dynamo handed the backend no graph"
GRU = "Attempted to wrap RNN, GRU, or LSTM"  # Dynamo's own reason, quoted in the line
OWN = "(the model, not the compiler)"


def _table() -> dict[tuple[str, str], int | None]:
    """(tool, outcome) -> the exit code the README's outcomes table gives (None: `—`, cannot give it)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("### Outcomes (every tool that judges compiled code)", 1)[1]
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:  # the table: its lines up to the first that is not one of its rows
        if not line.startswith("|"):
            break
        rows.append(line)
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    out: dict[tuple[str, str], int | None] = {}
    for line in rows[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for tool, cell in zip(head[3:], cells[3:], strict=True):
            m = re.match(r"(\d+)", cell)
            out[(tool, OUTCOMES[cells[0]])] = int(m.group(1)) if m else None
    return out


TABLE = _table()

# (tool, outcome) -> (argv after the tool, text its stderr must hold)
CASES: dict[tuple[str, str], tuple[list[str], list[str]]] = {
    ("kdiff", "pass"): (["relu_mlp.py", "--backend", "aot_eager"], ["1 of 1 leaves pass (aot_eager vs eager"]),
    ("kdiff", "fail"): (["relu_mlp.py", "--backend", "relu_accuracy_error_TESTING_ONLY", "--no-localize"],
                        ["FAIL out"]),
    ("kdiff", "nothing"): (["gru_tagger.py"], [NOTHING, GRU, "no verdict on inductor"]),
    ("kdiff", "own"): (["own_failure.py"], [OWN]),
    ("kdiff", "crash"): (["relu_mlp.py", "--backend", "relu_compile_error_TESTING_ONLY"], ["crashed during"]),
    ("fxcheck", "nothing"): (["gru_tagger.py"], [NOTHING, GRU, "0 graphs checked"]),
    ("fxcheck", "own"): (["own_failure.py"], [OWN]),
    ("guardscan", "nothing"): (["gru_tagger.py", "--no-default-vary"], [NOTHING, "allow_rnn"]),
    ("guardscan", "own"): (["own_failure.py", "--no-default-vary"], [OWN]),
    ("guardscan", "crash"): (["relu_mlp.py", "--no-default-vary", "--backend", "relu_compile_error_TESTING_ONLY"],
                             ["crashed during"]),
    ("aotiprint", "nothing"): (["gru_tagger.py", "--jit"], [NOTHING, GRU]),
    ("aotiprint", "own"): (["own_failure.py"], [OWN]),
    ("minify", "nothing"): (["gru_tagger.py"], [NOTHING, GRU, "no repro written"]),
    ("minify", "own"): (["own_failure.py"], [OWN]),
    ("benchrun", "nothing"): (["gru_tagger.py", "-b", "aot_eager", "--repeat", "3", "--warmup", "0"], [NOTHING]),
    ("benchrun", "own"): (["own_failure.py", "-b", "aot_eager", "--repeat", "3", "--warmup", "0"], [OWN]),
}


def test_the_table_names_every_tool_and_outcome():
    tools = {t for t, _ in TABLE}
    assert tools == {"kdiff", "fxcheck", "guardscan", "aotiprint", "minify", "benchrun"}
    assert {o for _, o in TABLE} == set(OUTCOMES.values())
    # the new outcomes are run for every tool that can give them
    for tool in tools:
        for outcome in ("nothing", "own"):
            assert TABLE[(tool, outcome)] is None or (tool, outcome) in CASES, (tool, outcome)


@pytest.mark.parametrize("case", sorted(CASES), ids=lambda c: f"{c[0]}-{c[1]}")
def test_tool_gives_the_tables_exit_code(case, tmp_path):
    tool, outcome = case
    argv, said = CASES[case]
    want = TABLE[case]
    assert want is not None, f"the README's table says {tool} cannot give {outcome}"
    r = run([tool, *argv, "--store", str(tmp_path / "store")], cwd=MODELS, timeout=300)
    assert r.code == want, r.stderr[-3000:]
    for text in said:
        assert text in r.stderr, r.stderr[-3000:]
    if outcome == "nothing":  # never a pass in other words
        assert "leaves pass" not in r.stderr and "clean:" not in r.stderr
    if outcome == "own":  # the model's, not a crash record
        assert not [x for x in r.records if x["kind"] == "crash"]
