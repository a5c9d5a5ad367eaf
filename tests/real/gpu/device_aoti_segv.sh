#!/usr/bin/env bash
# Issue 44 on the GPU machine (torch 2.11, CUDA): an AOT Inductor package that segfaults as it loads (torch
# 2.11 does so for any package there, its bug, not ours) must be a `crash` record naming the exported graph
# (model s.py[aoti/0], stage aoti-load, signal SIGSEGV), so `| minify` cuts it with no flag (a repro that
# dies of SIGSEGV) where it said only "the command was killed by SIGSEGV".
# Results under $OUT: records, stderr, summary.txt with one line per case: exit codes of capture, minify
# and the repro, the crash records (model, stage, signal, phase), the repro's ops.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-aoti-segv-out}
. tests/real/gpu/device_env.sh
export PT2KIT_STORE="$OUT/store"
mkdir -p "$OUT/aoti_load"
cat >"$OUT/aoti_load/s.py" <<'PY'
import torch
class Net(torch.nn.Module):
    def forward(self, x):
        return torch.cos(torch.relu(x))
x = torch.randn(20, 20, device="cuda")
ep = torch.export.export(Net(), (x,))
path = torch._inductor.aoti_compile_and_package(ep, package_path="net.pt2")
print(torch._inductor.aoti_load_package(path)(x))
PY
d="$OUT/aoti_load"
(cd "$d" && $PY -m pt2kit.capture -- $PY s.py >c.ndjson 2>capture.err; echo $? >capture.rc
 $PY -m pt2kit.minify -o repro.py <c.ndjson >m.ndjson 2>minify.err; echo $? >minify.rc
 if [ -f repro.py ]; then timeout 600 $PY repro.py >repro.out 2>&1; echo $? >repro.rc; else echo - >repro.rc; fi)
printf 'aoti_load: capture %s minify %s repro %s; crashes %s; ops %s\n' "$(cat $d/capture.rc)" "$(cat $d/minify.rc)" \
  "$(cat $d/repro.rc)" \
  "$($PY -c 'import json,sys; print([(r.get("model"), r["stage"], r.get("signal"), r.get("phase")) for r in map(json.loads, open(sys.argv[1])) if r["kind"]=="crash"])' $d/c.ndjson 2>/dev/null)" \
  "$($PY -c 'import json,sys; print([r.get("ops") for r in map(json.loads, open(sys.argv[1])) if r["kind"]=="repro"])' $d/m.ndjson 2>/dev/null)" \
  | tee -a "$OUT/summary.txt"
