#!/usr/bin/env bash
# Issue 47's benchmark on the GPU machine (torch 2.11, CUDA, Triton, its 16-core CPU): pt2kit's bisection
# (`pt2kit capture -- python s.py | kdiff | minify`, minify's bisect record) against PyTorch's own
# `python -m torch._inductor.compiler_bisector run python s.py`, on every planted script of tests/bisect/
# plus Triton's planted relu bug (tests/bisect/triton_relu.py, CUDA only): both answers, both wall times,
# their ratio (benchmarks/bench_bisect.py). Installs nothing from the network (device_env.sh; carry .devrun).
# Results under $OUT: bench.txt (one row a case, then the count and the ratios), bench.json, summary.txt.
#
#   bash tests/real/gpu/device_bisect_bench.sh [NAME...]   # NAME: a case of bench_bisect.py, or triton_relu
#
# All 8 cases may not fit one 10-minute device call: give a few names a call (OUT differs per call; TORCH_TIMEOUT=S
# stops PyTorch's bisector past S seconds, its time then a lower bound), e.g.
#   OUT=/tmp/bb1 bash ... triton_relu relu_bug wrong_decomp   and   OUT=/tmp/bb2 bash ... post_grad_pass joint_pass
#
# Expected: the same culprit (inductor/lowerings for both relu bugs, inductor/post_grad_passes #8
# post_grad_custom_post_pass and inductor/joint_graph_passes for the two passes, aot_eager for aot_eager_fail,
# none for healthy); two differ by design, ours saying why (README, "Which stage breaks it"): wrong_decomp
# (PyTorch aot_eager_decomp_partition/decomposition; ours no stage, its verdict naming the aten.silu.default
# decomposition the backend installs, which torch's switches cannot turn off with that backend kept) and
# fallback_random (PyTorch a decomposition, or inductor_fallback_random on CUDA; ours none: kdiff passes under
# the accuracy harness's fallback_random); goal >= 5x faster.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-bisect-bench-out}
. tests/real/gpu/device_env.sh
export PT2KIT_STORE="$OUT/store"
names=(); extra=()
for n in "$@"; do if [ "$n" = triton_relu ]; then extra=(--extra triton_relu); else names+=("$n"); fi; done
[ $# = 0 ] && extra=(--extra triton_relu)
[ $# -gt 0 ] && [ ${#names[@]} = 0 ] && names=(none)  # triton_relu alone: no CPU case matches "none"
start=$(date +%s)
timeout 590 $PY benchmarks/bench_bisect.py "${names[@]}" "${extra[@]}" --torch-timeout "${TORCH_TIMEOUT:-1800}" --json "$OUT/bench.json" >"$OUT/bench.txt" 2>&1
rc=$?
{ echo "bench_bisect: exit $rc in $(( $(date +%s) - start )) s (124: past the 590 s limit; rows so far below)"
  $PY -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
  cat "$OUT/bench.txt"; } >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
