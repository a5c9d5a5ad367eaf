#!/usr/bin/env bash
# Issues 28 and 29 on the GPU machine (torch 2.11, CUDA, Triton): training failures and pt2kit capture on
# real torchvision models. Installs nothing from the network (device_env.sh). Results under $OUT: each
# tool's records (.ndjson) and stderr, the repros, summary.txt with one OK/NOT OK line per expectation.
#
# Expected:
# - kdiff resnet18 --grad with a backend whose threshold_backward is planted wrong: exit 1, one divergence
#   with phase backward, op aten.threshold_backward.default, forward_op aten.relu.default, at torchvision's
#   resnet.py; kdiff resnet18 --mode train (healthy, harness precision: no TF32 false FAIL): exit 0.
# - minify --mode train of minify's relu15 net (a hand-written backward holding relu; Triton's planted relu
#   bug: NaN only in a gradient): exit 1, a repro of <= 3 ops that exits 1, and 0 with CONFIG = {}.
# - PyTorch's own after_aot (TORCHDYNAMO_REPRO_AFTER=aot, level 4) on the same training step: what it
#   does is recorded (after_aot.txt), not judged.
# - minify --mode train of resnet18 with the threshold_backward bug: exit 1, a repro of <= 3 ops, exit 1.
# - pt2kit capture of a user's resnet18 training script (AdamW, 2 steps, torch.compile): exit 0, model
#   records on cuda with grad true; `| kdiff --mode train` on them: exit 0.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-train-out}
. tests/real/gpu/device_env.sh
export PT2KIT_STORE="$OUT/store"
R18=tests/real/gpu/resnet18.py
BUGS=packages/kdiff/tests/models/backward_bugs.py
NETS=packages/minify/tests/models/train_nets.py
BUG=triton.inject_relu_bug_TESTING_ONLY=accuracy
{ nvidia-smi; $PY -c 'import torch, sys; print(sys.version); print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'; } >"$OUT/env.txt" 2>&1

expect() {  # expect NAME WANTED_EXIT GOT_EXIT
  if [ "$2" = "$3" ]; then echo "OK     $1: exit $3" ; else echo "NOT OK $1: exit $3, expected $2"; fi | tee -a "$OUT/summary.txt"
}
tool() {  # tool NAME WANTED_EXIT command...   (stdin: $IN, else nothing)
  local name=$1 want=$2; shift 2
  timeout 540 "$@" >"$OUT/$name.ndjson" 2>"$OUT/$name.stderr" <"${IN:-/dev/null}"
  expect "$name" "$want" $?
}

cat >"$OUT/train_r18.py" <<'PY'
import torch, torchvision
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None, num_classes=10).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = torch.compile(model)
for i in range(2):
    x, y = torch.randn(8, 3, 64, 64, device="cuda"), torch.randint(0, 10, (8,), device="cuda")
    loss = torch.nn.functional.cross_entropy(step(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print("loss", round(loss.item(), 4))
PY
cat >"$OUT/after_aot_relu15.py" <<PY
import sys, torch
sys.path.insert(0, "$PWD/packages/minify/tests/models")
import torch._inductor.config as c
c.triton.inject_relu_bug_TESTING_ONLY = "accuracy"
from train_nets import relu15
model, (x,) = relu15()
model, x = model.cuda(), x.cuda()
out = torch.compile(model)(x)
out.float().mean().backward()
print("grad nan:", any(p.grad.isnan().any().item() for p in model.parameters()))
PY

# phase 1, side by side (16 CPU cores)
tool kdiff_r18_relu_grad 1 $PY -m pt2kit.kdiff "$R18" --device cuda --grad --backend "$BUGS:relu_grad" &
tool kdiff_r18_train 0 $PY -m pt2kit.kdiff "$R18" --device cuda --mode train &
tool minify_relu15_train 1 $PY -m pt2kit.minify "$NETS:relu15" --device cuda --mode train --config "$BUG" -o "$OUT/repro_train.py" &
tool minify_r18_relu_grad 1 $PY -m pt2kit.minify "$R18" --device cuda --mode train --backend "$BUGS:relu_grad" -o "$OUT/repro_r18.py" &
tool capture_r18 0 $PY -m pt2kit.capture --out "$OUT/capture_r18.ndjson" -- $PY "$OUT/train_r18.py" &
( cd "$OUT" && mkdir -p aot && cd aot && TORCHDYNAMO_REPRO_AFTER=aot TORCHDYNAMO_REPRO_LEVEL=4 timeout 400 $PY ../after_aot_relu15.py >../after_aot_dump.out 2>&1; echo "dump exit $?" >../after_aot.txt
  launcher=$(find . -name minifier_launcher.py | head -1)
  if [ -n "$launcher" ]; then timeout 400 $PY "$launcher" minify >../after_aot_minify.out 2>&1; echo "launcher minify exit $?" >>../after_aot.txt
    find . -name 'repro.py' | head -3 >>../after_aot.txt
  else echo "no minifier_launcher.py written" >>../after_aot.txt; fi
  tail -n 3 ../after_aot_dump.out >>../after_aot.txt ) &
wait
IN="$OUT/capture_r18.ndjson" tool kdiff_captured_train 0 $PY -m pt2kit.kdiff --mode train
m=$(grep -c '"kind":"model"' "$OUT/kdiff_captured_train.ndjson"); d=$(grep -c '"kind":"diff"' "$OUT/kdiff_captured_train.ndjson")
if [ "$m" -ge 1 ] && [ "$d" -ge 1 ]; then echo "OK     kdiff on the captured graph: $m model, $d diffs"; else echo "NOT OK kdiff on the captured graph: $m model, $d diffs"; fi | tee -a "$OUT/summary.txt"
$PY - "$OUT" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
out = sys.argv[1]
def recs(name):
    try:
        return [json.loads(x) for x in open(f"{out}/{name}.ndjson") if x.strip()]
    except OSError:
        return []
v = [r for r in recs("kdiff_r18_relu_grad") if r["kind"] == "divergence"]
ok = len(v) == 1 and v[0].get("phase") == "backward" and v[0].get("op") == "aten.threshold_backward.default" \
    and v[0].get("forward_op") == "aten.relu.default" and "resnet.py" in str(v[0].get("source"))
print("OK    " if ok else "NOT OK", "kdiff backward divergence:",
      {k: v[0].get(k) for k in ("phase", "op", "forward_op", "source", "node")} if v else None)
m = [r for r in recs("capture_r18") if r["kind"] == "model"]
ok = bool(m) and all(r.get("device", "").startswith("cuda") and r["captured"].get("grad") for r in m)
print("OK    " if ok else "NOT OK", "capture:", len(m), "model records", [(r["model"], r.get("device")) for r in m][:4])
r = [x for x in recs("minify_relu15_train") if x["kind"] == "repro"]
print("OK    " if r and r[0]["nodes_after"] <= 3 else "NOT OK", "minify train repro:",
      [(x.get("phase"), x["nodes_before"], x["nodes_after"], x.get("failure")) for x in r])
PY
if [ -f "$OUT/repro_train.py" ]; then
  timeout 300 $PY "$OUT/repro_train.py" >"$OUT/repro_bug.out" 2>&1; expect "train repro with the bug" 1 $?
  sed -E '0,/^CONFIG = .*/s//CONFIG = {}/' "$OUT/repro_train.py" >"$OUT/repro_nobug.py"
  timeout 300 $PY "$OUT/repro_nobug.py" >"$OUT/repro_nobug.out" 2>&1; expect "train repro with CONFIG = {}" 0 $?
else
  echo "NOT OK minify wrote no repro_train.py" | tee -a "$OUT/summary.txt"
fi
if [ -f "$OUT/repro_r18.py" ]; then
  timeout 300 $PY "$OUT/repro_r18.py" >"$OUT/repro_r18.out" 2>&1; expect "resnet18 backward repro with the bug" 1 $?
  grep -m3 "ops\|Runs" "$OUT/repro_r18.py" | tee -a "$OUT/summary.txt"
fi
echo "== after_aot"; cat "$OUT/after_aot.txt" | tee -a "$OUT/summary.txt"
for f in "$OUT"/*.stderr; do echo "== $f"; tail -n 4 "$f"; done
cat "$OUT/summary.txt"
