#!/usr/bin/env bash
# Issue 45 on the GPU machine (torch 2.11, CUDA, Triton): every judging tool over every real model file
# (tests/real/models: transformers; tests/real/gpu: torchvision and timm), --device cuda, as a user runs
# them. Installs nothing from the network (device_env.sh). Results under $OUT: each run's records
# (.ndjson) and stderr, and summary.txt: per run its exit code and the tool's last stderr line (its
# verdict), then per tool how many runs ended in each exit code (README's Outcomes table: 0 pass, 1 fail,
# 2 the model's own failure / usage, 3 the compiler crashed). Nothing is judged here: the lines are read.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-tools-out}
. tests/real/gpu/device_env.sh
export PT2KIT_STORE="$OUT/store"
JOBS=${JOBS:-6}
# TOOLS="kdiff|minify": only those tools' runs (default: every tool)
MODELS=${MODELS:-$(ls tests/real/models/*.py; printf '%s\n' tests/real/gpu/{resnet18,vit_timm,vit_hf,patch_embed,fasterrcnn}.py)}
{ nvidia-smi -L; $PY -c 'import torch, sys; print(sys.version); print("torch", torch.__version__, torch.version.cuda)'; } >"$OUT/env.txt" 2>&1

one() {  # one TOOL MODEL ARGS...: a run's exit code and last stderr line, into $OUT/runs/
  local tool=$1 model=$2; shift 2
  local name; name="$tool$(echo " $*" | tr -c 'a-z0-9\n' '_')-$(basename "$model" .py)"
  timeout 590 $PY -m "pt2kit.$tool" "$model" "$@" >"$OUT/runs/$name.ndjson" 2>"$OUT/runs/$name.stderr" </dev/null
  local rc=$?
  printf '%s\t%s\t%s %s\t%s\n' "$rc" "$tool" "$(basename "$model")" "$*" \
    "$(grep -v '^\s*$' "$OUT/runs/$name.stderr" | tail -1 | cut -c1-240)" >"$OUT/runs/$name.line"
}
export -f one; export OUT PY
mkdir -p "$OUT/runs"
for m in $MODELS; do
  echo "kdiff $m --device cuda"
  echo "kdiff $m --device cuda --grad"
  echo "fxcheck $m --device cuda"
  echo "guardscan $m --device cuda"
  echo "aotiprint $m --device cuda --jit"
  echo "benchrun $m --device cuda --repeat 5 --warmup 2"
  echo "minify $m --device cuda"
done | grep -E "^(${TOOLS:-kdiff|fxcheck|guardscan|aotiprint|benchrun|minify}) " | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
# AOT Inductor once (on torch 2.11 every AOTI package segfaults while loading: a crash record)
[ -n "${AOTI:-1}" ] && one aotiprint tests/real/gpu/resnet18.py --device cuda
{ echo "# exit  tool  model+args  last stderr line"; sort -k2,2 -k3,3 "$OUT"/runs/*.line
  echo; echo "# per tool: how many runs ended in each exit code"
  awk -F'\t' '{n[$2" exit "$1]++} END {for (k in n) print k": "n[k]}' "$OUT"/runs/*.line | sort; } >"$OUT/summary.txt"
cat "$OUT/summary.txt"
