#!/usr/bin/env bash
# Where the time of `pt2kit capture | kdiff | minify` goes on the GPU machine's CPU, for one planted script
# of tests/bisect/ (default post_grad_pass), alone on the machine: one cold Inductor C++ compile of a small
# function (the unit every step pays), then the pipeline with each tool's stderr stamped with seconds since
# its start (timeline.txt, sorted). Installs nothing from the network (device_env.sh; carry .devrun).
#
#   OUT=/tmp/prof bash tests/real/gpu/device_bisect_profile.sh [NAME | PATH.py]   (KDIFF=0: capture | minify; PIPELINE_ONLY=1: no compile timings first)
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-bisect-profile}
. tests/real/gpu/device_env.sh
NAME=${1:-post_grad_pass}
S="$PWD/tests/bisect/$NAME.py"
case $NAME in *.py) S="$PWD/$NAME"; NAME=$(basename "$NAME" .py) ;; esac  # any script, e.g. tests/minifier/...
FLAGS=""
case $NAME in
  post_grad_pass) FLAGS="--config post_grad_custom_post_pass=$S:corrupt" ;;
  joint_pass) FLAGS="--config joint_custom_post_pass=$S:corrupt" ;;
  wrong_decomp) FLAGS="--backend $S:inductor_with_wrong_silu" ;;
esac
export PT2KIT_STORE="$OUT/store"
stamp() { $PY -u -c 'import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:7.2f} {sys.argv[2]} {line}")' "$1" "$2"; }
[ "${PIPELINE_ONLY:-0}" = 1 ] || { echo "== one cold compile of a 2-op function (fresh Inductor cache), then warm"
  TORCHINDUCTOR_CACHE_DIR="$OUT/c0" $PY -c '
import time, torch
t = time.time(); f = torch.compile(lambda x: (x * 2 + 1).relu()); f(torch.randn(64, 64)); print(f"cold {time.time() - t:.1f} s")
torch._dynamo.reset(); t = time.time(); f = torch.compile(lambda x: (x * 2 + 1).relu()); f(torch.randn(64, 64)); print(f"fx-cached {time.time() - t:.1f} s")
import torch._inductor.config as c; print("cpp isa", c.cpp.simdlen, "compile_threads", c.compile_threads)
from torch._inductor.cpu_vec_isa import pick_vec_isa; print("vec isa", pick_vec_isa())'
  echo "== a second process, the same cache: Inductor's machine probes, then a compile of another function"
  TORCHINDUCTOR_CACHE_DIR="$OUT/c0" $PY -c '
import time, torch, torch._dynamo, torch._inductor.compile_fx
from pt2kit.runtime.shims.torchapi import warm_inductor
t = time.time(); warm_inductor(); print(f"probes {time.time() - t:.1f} s")
t = time.time(); f = torch.compile(lambda x: (x * 3 - 1).sigmoid()); f(torch.randn(64, 64)); print(f"compile after the probes {time.time() - t:.1f} s")'
  echo "== the script alone"; /usr/bin/time -f "script %e s" env TORCHINDUCTOR_CACHE_DIR="$OUT/c1" $PY "$S"
} >"$OUT/summary.txt" 2>&1
T0=$(date +%s.%N)
export TORCHINDUCTOR_CACHE_DIR="$OUT/c2"
$PY -m pt2kit.capture -- $PY "$S" 2> >(stamp "$T0" C >>"$OUT/tl.txt") \
  | if [ "${KDIFF:-1}" = 1 ]; then $PY -m pt2kit.kdiff $FLAGS 2> >(stamp "$T0" K >>"$OUT/tl.txt"); else cat; fi \
  | $PY -m pt2kit.minify $FLAGS -o "$OUT/repro.py" >"$OUT/minify.ndjson" 2> >(stamp "$T0" M >>"$OUT/tl.txt")
echo "pipeline $($PY -c "import time; print(round(time.time() - $T0, 1))") s" >>"$OUT/summary.txt"
sleep 1; sort -n "$OUT/tl.txt" >"$OUT/timeline.txt"
cat "$OUT/summary.txt"; cut -c1-220 "$OUT/timeline.txt"
