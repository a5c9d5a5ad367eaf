#!/usr/bin/env bash
# Issue 47 item 1 on the GPU machine (torch 2.11, CUDA, Triton): minify's bisection of a CUDA repro under
# Triton's planted relu bug, next to PyTorch's own CompilerBisector.do_bisect on the same model (both
# answers and wall times). Installs nothing from the network (device_env.sh). Results under $OUT:
# minify's stream and stderr, the repro, and summary.txt with one OK/NOT OK line per expectation.
#
# Expected: minify exit 1; a bisect record naming inductor / lowerings and relu, found (off passes, on
# fails); the repro's two TORCH_BISECT_* command lines exit 1 and 0; do_bisect's answer the same
# subsystem (its bisect number counts the whole model's lowerings, ours the repro's one graph).
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-bisect-out}
. tests/real/gpu/device_env.sh
check() { if eval "$2"; then echo "OK     $1"; else echo "NOT OK $1"; fi; }
cat >"$OUT/relu_cuda.py" <<'PY'
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).cuda()
example_inputs = (torch.randn(32, 64, device="cuda"),)
PY
start=$(date +%s)
timeout 500 $PY -m pt2kit.minify "$OUT/relu_cuda.py" --device cuda --config triton.inject_relu_bug_TESTING_ONLY=accuracy \
  -o "$OUT/repro.py" --store "$OUT/store" >"$OUT/minify.ndjson" 2>"$OUT/minify.txt" </dev/null
rc=$?
echo "minify: exit $rc in $(( $(date +%s) - start )) s" >"$OUT/summary.txt"
grep '"kind":"bisect"' "$OUT/minify.ndjson" >"$OUT/bisect.json"
( cd "$OUT" && env TORCH_BISECT_BACKEND=inductor TORCH_BISECT_SUBSYSTEM=lowerings TORCH_BISECT_MAX=0 timeout 300 $PY repro.py \
    >on.txt 2>&1; echo "exit $?" >>on.txt
  env TORCH_BISECT_BACKEND=inductor TORCH_BISECT_SUBSYSTEM=lowerings TORCH_BISECT_MAX=-1 timeout 300 $PY repro.py \
    >off.txt 2>&1; echo "exit $?" >>off.txt )
cat >"$OUT/do_bisect.py" <<'PY'
import time, torch
from torch._inductor import config
from torch._inductor.compiler_bisector import CompilerBisector
config.triton.inject_relu_bug_TESTING_ONLY = "accuracy"
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).cuda()
x = torch.randn(32, 64, device="cuda")
def ok():
    torch._dynamo.reset()
    with torch.no_grad():
        return torch.allclose(torch.compile(net, backend=CompilerBisector.get_backend() or "inductor")(x), net(x),
                              rtol=1e-3, atol=1e-3)
t = time.time()
print("do_bisect:", CompilerBisector.do_bisect(ok), f"{time.time() - t:.1f} s")
PY
timeout 500 $PY "$OUT/do_bisect.py" >"$OUT/do_bisect.txt" 2>&1
{
  check "minify exits 1" "[ $rc = 1 ]"
  check "a bisect record: inductor lowerings, found" "grep -q '\"subsystem\":\"lowerings\"' '$OUT/bisect.json' && grep -q '\"found\":true' '$OUT/bisect.json'"
  check "it names relu" "grep -q '\"what\":\"relu' '$OUT/bisect.json'"
  check "stderr says the stage" "grep -q 'stage: Inductor: lowerings' '$OUT/minify.txt'"
  check "TORCH_BISECT_MAX=0 python repro.py exits 1" "grep -q '^exit 1' '$OUT/on.txt'"
  check "TORCH_BISECT_MAX=-1 python repro.py exits 0" "grep -q '^exit 0' '$OUT/off.txt'"
  check "do_bisect names lowerings too" "grep -q \"subsystem='lowerings'\" '$OUT/do_bisect.txt'"
  grep -o '"steps":[0-9]*,"wall_s":[0-9.]*' "$OUT/bisect.json"; tail -1 "$OUT/do_bisect.txt"
} >>"$OUT/summary.txt"
cat "$OUT/summary.txt"; tail -5 "$OUT/minify.txt"
