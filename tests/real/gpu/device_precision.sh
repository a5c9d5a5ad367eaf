#!/usr/bin/env bash
# Issue 30 on the GPU machine (torch 2.11, transformers, timm; no network): the precision tests in
# tests/real/gpu/test_precision_gpu.py. Installs nothing from the network: pt2kit runs from its source
# trees on PYTHONPATH, msgspec from .devrun/wheels (carried;
# device_env.sh). Results under $OUT: pytest's log and junit xml, nvidia-smi, versions.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu30-out}
. tests/real/gpu/device_env.sh
{ nvidia-smi; $PY -c 'import torch, sys; print(sys.version); print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'
  $PY -c 'import transformers; print("transformers", transformers.__version__)'; } >"$OUT/env.txt" 2>&1
# the issue's own command first, as a user types it
( $PY -m pt2kit.kdiff tests/real/gpu/vit_hf.py --device cuda >"$OUT/kdiff_vit.ndjson" 2>"$OUT/kdiff_vit.stderr"
echo "kdiff vit_hf.py --device cuda: exit $?" | tee -a "$OUT/summary.txt" ) &
( $PY -m pt2kit.kdiff tests/real/gpu/vit_hf.py --device cuda --precision as-configured \
  >"$OUT/kdiff_vit_asconf.ndjson" 2>"$OUT/kdiff_vit_asconf.stderr"
echo "kdiff vit_hf.py --device cuda --precision as-configured: exit $?" | tee -a "$OUT/summary.txt" ) &
timeout 500 $PY -m pytest -q -p no:cacheprovider -rA tests/real/gpu/test_precision_gpu.py \
  --junitxml="$OUT/junit.xml" >"$OUT/pytest.log" 2>&1
echo "pytest tests/real/gpu/test_precision_gpu.py: exit $?" | tee -a "$OUT/summary.txt"
wait; tail -n 40 "$OUT/pytest.log"; cat "$OUT/summary.txt"
