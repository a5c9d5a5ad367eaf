# Sourced by the device_*.sh scripts, from the repository root with OUT set: pt2kit from its source trees on
# PYTHONPATH, and msgspec (the one package the GPU machine's Python lacks: it holds torch, click, typer,
# rich, pytest, matplotlib) from the carried .devrun/wheels. Nothing comes from the network.
mkdir -p "$OUT"
PY=python3
$PY -c 'import msgspec' 2>/dev/null || $PY -m pip install -q --no-index --find-links .devrun/wheels \
  --target .devrun/site msgspec >"$OUT/pip.log" 2>&1 || echo "pip install msgspec failed: see pip.log" | tee -a "$OUT/summary.txt"
SRC="$PWD/schemas/src"
for p in packages/*/src; do SRC="$SRC:$PWD/$p"; done
export PYTHONPATH="$SRC:$PWD/.devrun/site${PYTHONPATH:+:$PYTHONPATH}"
