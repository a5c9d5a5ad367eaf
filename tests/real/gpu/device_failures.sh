#!/usr/bin/env bash
# Issue 44 on the GPU machine (torch 2.11, CUDA, Triton): PyTorch's GPU minifier programs (Triton's planted
# relu bug: compile_error, runtime_error, accuracy) as plain scripts, through the README pipeline with no
# flag: `pt2kit capture -- python s.py | [kdiff |] minify -o repro.py`, then `python repro.py` alone.
# Results under $OUT: each step's records and stderr, summary.txt with one line per case: the exit codes
# of the script (as capture returns it), kdiff, minify and the repro, the repro's ops, the error it names.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-failures-out}
. tests/real/gpu/device_env.sh
export PT2KIT_STORE="$OUT/store"
case_() {  # case_ NAME BUG
  local d="$OUT/$1"; mkdir -p "$d"
  cat >"$d/s.py" <<PY
import torch
import torch._inductor.config as c
c.triton.inject_relu_bug_TESTING_ONLY = "$2"
def inner(x):
    return torch.cos(torch.relu(x))
out = torch.compile(inner)(torch.randn(20, 20, device="cuda"))
print("finite:", bool(out.isfinite().all()))
PY
  (cd "$d" && $PY -m pt2kit.capture -- $PY s.py >c.ndjson 2>capture.err; echo $? >capture.rc
   if [ "$2" = accuracy ]; then $PY -m pt2kit.kdiff <c.ndjson >k.ndjson 2>kdiff.err; echo $? >kdiff.rc; IN=k.ndjson
   else echo - >kdiff.rc; IN=c.ndjson; fi
   $PY -m pt2kit.minify -o repro.py <$IN >m.ndjson 2>minify.err; echo $? >minify.rc
   if [ -f repro.py ]; then timeout 300 $PY repro.py >repro.out 2>&1; echo $? >repro.rc; else echo - >repro.rc; fi)
  printf '%s: capture %s kdiff %s minify %s repro %s; ops %s; %s\n' "$1" "$(cat $d/capture.rc)" "$(cat $d/kdiff.rc)" \
    "$(cat $d/minify.rc)" "$(cat $d/repro.rc)" \
    "$($PY -c 'import json,sys; print([r.get("ops") for r in map(json.loads, open(sys.argv[1])) if r["kind"]=="repro"])' $d/m.ndjson 2>/dev/null)" \
    "$(grep -v '^\s*$' $d/repro.out 2>/dev/null | tail -1 | cut -c1-160)" | tee -a "$OUT/summary.txt"
}
case_ triton_compile_error compile_error &
case_ triton_runtime_error runtime_error &
case_ triton_accuracy accuracy &
wait
