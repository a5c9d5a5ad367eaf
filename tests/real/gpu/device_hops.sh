#!/usr/bin/env bash
# Issue 33 on the GPU machine (torch 2.11, CUDA): higher-order ops through kdiff, minify and aotiprint.
# The models are packages/kdiff/tests/models/hops.py (cond, while_loop, flex). Installs nothing from the
# network: pt2kit runs from its source trees on PYTHONPATH, msgspec from .devrun/wheels where missing.
# Results under $OUT: each tool's records (.ndjson) and stderr, the repro, summary.txt with one line per
# expectation (OK/NOT OK) and the exit codes.
#
# Expected: kdiff flex / cond / while_loop --device cuda exit 0; aotiprint --jit flex exit 0 (never 3);
# kdiff cond with the triton relu bug exit 1, divergence aten.relu.default in "cond → true_graph_0" at
# hops.py's torch.cond line; minify of the same exit 1 with a repro that exits 1, and 0 with CONFIG = {}.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu33-out}
. tests/real/gpu/device_env.sh
export PT2KIT_STORE="$OUT/store"
HOPS=packages/kdiff/tests/models/hops.py
BUG=triton.inject_relu_bug_TESTING_ONLY=accuracy
{ nvidia-smi; $PY -c 'import torch, sys; print(sys.version); print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'; } >"$OUT/env.txt" 2>&1

expect() {  # expect NAME WANTED_EXIT GOT_EXIT
  if [ "$2" = "$3" ]; then echo "OK     $1: exit $3" ; else echo "NOT OK $1: exit $3, expected $2"; fi | tee -a "$OUT/summary.txt"
}
tool() {  # tool NAME WANTED_EXIT command...
  local name=$1 want=$2; shift 2
  timeout 540 "$@" >"$OUT/$name.ndjson" 2>"$OUT/$name.stderr" </dev/null
  expect "$name" "$want" $?
}

# phase 1, side by side (16 CPU cores): the healthy models
tool kdiff_flex 0 $PY -m pt2kit.kdiff "$HOPS:flex" --device cuda &
tool kdiff_cond 0 $PY -m pt2kit.kdiff "$HOPS:cond" --device cuda &
tool kdiff_while 0 $PY -m pt2kit.kdiff "$HOPS:while_loop" --device cuda &
tool aotiprint_jit_flex 0 $PY -m pt2kit.aotiprint --jit "$HOPS:flex" --device cuda &
wait
# phase 2: the planted triton relu bug inside the cond's true branch
tool kdiff_cond_bug 1 $PY -m pt2kit.kdiff "$HOPS:cond" --device cuda --config "$BUG" &
tool minify_cond_bug 1 $PY -m pt2kit.minify "$HOPS:cond" --device cuda --config "$BUG" -o "$OUT/repro.py" &
wait
$PY - "$OUT" "$HOPS" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
out, hops = sys.argv[1], sys.argv[2]
line = next(i for i, t in enumerate(open(hops).read().splitlines(), 1) if "torch.cond(" in t)
recs = [json.loads(x) for x in open(f"{out}/kdiff_cond_bug.ndjson") if x.strip()]
v = [r for r in recs if r["kind"] == "divergence"]
ok = len(v) == 1 and v[0]["op"] == "aten.relu.default" and v[0].get("subgraph") == "cond → true_graph_0" \
    and str(v[0].get("source", "")).endswith(f"hops.py:{line}")
print(("OK    " if ok else "NOT OK"), "kdiff_cond_bug divergence:", {k: v[0].get(k) for k in ("op", "node", "subgraph", "source")} if v else None)
PY
if [ -f "$OUT/repro.py" ]; then
  cp "$OUT/repro.py" "$OUT/repro_bug.py"
  timeout 300 $PY "$OUT/repro_bug.py" >"$OUT/repro_bug.out" 2>&1; expect "repro with the bug" 1 $?
  sed -E '0,/^CONFIG = .*/s//CONFIG = {}/' "$OUT/repro.py" >"$OUT/repro_nobug.py"
  timeout 300 $PY "$OUT/repro_nobug.py" >"$OUT/repro_nobug.out" 2>&1; expect "repro with CONFIG = {}" 0 $?
else
  echo "NOT OK minify wrote no repro.py" | tee -a "$OUT/summary.txt"
fi
for f in "$OUT"/*.stderr; do echo "== $f"; tail -n 4 "$f"; done
cat "$OUT/summary.txt"
