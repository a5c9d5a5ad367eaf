#!/usr/bin/env bash
# Issue 59 on the GPU machine (torch 2.11, CUDA, Triton): mixed precision as users write it, the compiled model
# called inside `torch.autocast("cuda", ...)`, and model files that install compiler code at their top level.
# Installs nothing from the network (device_env.sh; carry .devrun). Results under $OUT: each tool's records and
# stderr, the repros, summary.txt with one OK/NOT OK line per expectation.
#
#   OUT=/tmp/amp bash tests/real/gpu/device_autocast.sh
#
# Expected:
# - capture of a CUDA AMP loop (bf16 autocast; fp16 nested in bf16 with a GradScaler, Triton's planted relu bug
#   in that model's options): exit 0, both graphs' records carry their autocast; `| kdiff`: exit 1, the bf16 graph
#   "5 of 5 leaves pass", the planted one's first divergence aten.relu.default; `| minify --no-bisect`: exit 1,
#   a relu repro in the short form (at most 150 lines) whose main enters the fp16 autocast, exiting 1 alone and 0
#   with CONFIG = {}.
# - a training step's short form under CUDA float16 autocast (Triton's planted relu bug): exit 1, 0 without the
#   bug; a backward graph alone's, run outside the autocast: the same.
# - minify --device cuda of packages/minify/tests/models/file_pass.py and file_decomp.py: exit 1, repros that
#   exit 1 alone; bisection: inductor post_grad_passes, and aot_eager_decomp_partition decomposition.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-autocast-out}
. tests/real/gpu/device_env.sh
export PT2KIT_STORE="$OUT/store"
{ nvidia-smi -L; $PY -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'; } >"$OUT/env.txt" 2>&1
expect() {  # expect NAME WANTED GOT
  if [ "$2" = "$3" ]; then echo "OK     $1: $3"; else echo "NOT OK $1: $3, expected $2"; fi | tee -a "$OUT/summary.txt"
}
sed -e 's/"cpu"/"cuda"/g' -e 's/cpp.inject_relu_bug_TESTING_ONLY/triton.inject_relu_bug_TESTING_ONLY/' \
    -e 's/^healthy, planted = Block(), Block()/healthy, planted = Block().cuda(), Block().cuda()/' \
    -e 's/^x = torch.randn(4, 16)/x = torch.randn(4, 16, device="cuda")/' tests/models/train_amp.py >"$OUT/train_amp.py"
for m in file_pass file_decomp; do  # beside the pipeline (one GPU, 16 cores): the whole script fits one call
  timeout 500 $PY -m pt2kit.minify --device cuda packages/minify/tests/models/$m.py -o "$OUT/$m-repro.py" \
    >"$OUT/$m.ndjson" 2>"$OUT/$m.stderr" &
done
cd "$OUT"
timeout 540 bash -c "$PY -m pt2kit.capture -- $PY train_amp.py 2>capture.stderr | $PY -m pt2kit.kdiff 2>kdiff.stderr \
  | tee kdiff.ndjson | $PY -m pt2kit.minify --no-bisect -o repro.py >minify.ndjson 2>minify.stderr; echo \${PIPESTATUS[@]}" >codes.txt
expect "capture | kdiff | minify exits" "0 1 0 1" "$(cat codes.txt)"
expect "bf16 graph judged" 1 "$(grep -c 'train_amp.py\[0/0\]: 5 of 5 leaves pass (inductor vs eager; .*every side under torch.autocast(cuda, bfloat16)' kdiff.stderr)"
expect "planted graph's divergence" 1 "$(grep -c 'train_amp.py\[0/1\]: first divergence: aten.relu.default' kdiff.stderr)"
# the short form (issue 58): its main enters the script's autocast around the check
expect "repro enters the autocast" 1 "$(grep -c "^        amp = \[torch.autocast('cuda', dtype=torch.float16)\]" repro.py)"
expect "repro of at most 150 lines" yes "$([ "$(wc -l <repro.py)" -le 150 ] && echo yes || echo no)"
$PY -I repro.py >repro.out 2>&1; expect "repro alone" 1 $?
sed -i 's/^CONFIG = .*/CONFIG = {}/' repro.py; $PY -I repro.py >>repro.out 2>&1; expect "repro without the bug" 0 $?
# a training step under CUDA autocast in the short form (float16, Triton's planted relu bug in the square's
# gradient): main enters the autocast, the gradients are taken outside it; a backward graph alone runs outside it
$PY - <<'PY' >train-forms.txt 2>&1
import torch
from pt2kit.minify import ir
from pt2kit.minify.judge import plan
from pt2kit.minify.parent import repro
from pt2kit.runtime.common.precision import HARNESS

amp = [{"device_type": "cuda", "dtype": "float16", "cache_enabled": True}]
bug = {"torch._inductor.config": {"triton.inject_relu_bug_TESTING_ONLY": "'accuracy'"}}
forms = {"train": ("dynamo", "joint", "class Repro(torch.nn.Module):\n    def forward(self, x, w):\n"
                   "        relu = torch.relu(x @ w) ** 2\n        return (relu, )\n", ["x", "w"]),
         "backward": ("aten", "backward", "class Repro(torch.nn.Module):\n    def forward(self, x):\n"
                      "        relu = torch.ops.aten.relu.default(x)\n        return (relu, )\n", ["x"])}
for name, (level, phase, source, names) in forms.items():
    specs = [("tensor", [64, 64], [64, 1], "float32", "cuda", -2.0, 2.0)] * len(names)
    failure = {"kind": "accuracy", "signature": "accuracy", "precision": dict(HARNESS), "autocast": amp,
               **({"phase": "backward"} if phase == "backward" else {})}
    c = ir.Candidate(source=source, inputs=[ir.Spec(*s) for s in specs], nodes=1, ops=["torch.relu"], key="k",
                     names=names, grad=[True] * len(names))
    for cfg, tag in ((bug, "bugged"), ({}, "fixed")):
        check = plan.short_form(failure, "inductor", cfg, specs, source, ["torch.relu"], level=level, phase=phase)
        print(name, tag, check)
        text = repro.render_short(c, failure=failure, check=check, backend="inductor", config=cfg, model="amp.py:make",
                                  graph=0, torch_version=torch.__version__, dynamic=False, seed=0, tool_version="dev",
                                  level=level, phase=phase)
        open(f"{name}-{tag}.py", "w").write(text)
        print(name, tag, len(text.splitlines()), "lines")
PY
for f in train backward; do
  $PY -I $f-bugged.py >$f-bugged.out 2>&1; expect "$f form under CUDA autocast, bugged" 1 $?
  $PY -I $f-fixed.py >$f-fixed.out 2>&1; expect "$f form under CUDA autocast, fixed" 0 $?
done
expect "train form enters the autocast" 1 "$(grep -c "outside=autocast_off_for(\['cuda'\])" train-bugged.py)"
cd - >/dev/null
wait
for m in file_pass file_decomp; do
  expect "minify $m" 1 "$(grep -c '"kind":"repro"' "$OUT/$m.ndjson")"
  (cd "$OUT" && $PY -I $m-repro.py >$m-repro.out 2>&1); expect "$m repro alone" 1 $?
  $PY - "$OUT/$m.ndjson" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
b = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "bisect"]
print("bisect:", [(r.get("backend"), r.get("subsystem"), r.get("what"), r.get("found")) for r in b])
PY
done
cat "$OUT/summary.txt"
