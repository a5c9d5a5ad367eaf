#!/usr/bin/env bash
# Issue 30 on the GPU machine (torch 2.11, transformers, timm; no network): the precision tests in
# tests/real/gpu/test_precision_gpu.py. Installs nothing from the network: pt2kit runs from its source
# trees on PYTHONPATH, msgspec/typer/rich/click/pytest/matplotlib come from .devrun/wheels (carried) where
# the machine lacks them. Results under $OUT: pytest's log and junit xml, nvidia-smi, versions.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu30-out}
mkdir -p "$OUT"
PY=python3
# the machine's python is a venv holding torch, click, typer, rich, pytest, matplotlib: add msgspec beside it
$PY -c 'import msgspec' 2>/dev/null || $PY -m pip install -q --no-index --find-links .devrun/wheels \
  --target .devrun/site msgspec >"$OUT/pip.log" 2>&1 || echo "pip install msgspec failed: see pip.log" | tee -a "$OUT/summary.txt"
SRC="$PWD/schemas/src"
for p in packages/*/src; do SRC="$SRC:$PWD/$p"; done
export PYTHONPATH="$SRC:$PWD/.devrun/site${PYTHONPATH:+:$PYTHONPATH}"
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
