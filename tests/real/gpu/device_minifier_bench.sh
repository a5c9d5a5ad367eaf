#!/usr/bin/env bash
# Issue 44's benchmark on a quiet machine with cores to spare (the GPU machine; its CPU only is used):
# PyTorch's CPU minifier tests as plain scripts, the README pipeline against PyTorch's own minifier (dump run
# + launcher), wall time of each and their ratio. `bash tests/real/gpu/device_minifier_bench.sh [NAME...]`;
# JOBS cases at once (default 4: each case's runs use a core or two, and the machine has 16).
# Results under $OUT: bench.txt (the table, counts, median ratio) and bench.json.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-minbench-out}
. tests/real/gpu/device_env.sh
# the tools run from their source trees: commands named as the benchmark calls them
export PT2KIT_BIN="$OUT/bin"; mkdir -p "$PT2KIT_BIN"
printf '#!/bin/sh\n[ "$1" = capture ] && shift && exec %s -m pt2kit.capture "$@"\nexec %s -m pt2kit.runtime "$@"\n' \
  "$(command -v $PY)" "$(command -v $PY)" >"$PT2KIT_BIN/pt2kit"
for tool in kdiff minify; do printf '#!/bin/sh\nexec %s -m pt2kit.%s "$@"\n' "$(command -v $PY)" $tool >"$PT2KIT_BIN/$tool"; done
chmod +x "$PT2KIT_BIN"/*
export CUDA_VISIBLE_DEVICES=""  # the CPU tests, as PyTorch runs them on a CPU machine
export PT2KIT_STORE="$OUT/store"
$PY benchmarks/bench_minifier_tests.py --jobs "${JOBS:-4}" --json "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.txt"
