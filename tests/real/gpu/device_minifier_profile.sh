#!/usr/bin/env bash
# Where the README pipeline's wall time goes on the quiet GPU machine's CPU, one ported minifier test a case
# (`bash tests/real/gpu/device_minifier_profile.sh NAME...`, all at once): the script alone, `import torch`,
# capture, kdiff (accuracy cases), minify with its stage lines, and the repro alone. $OUT/NAME/ keeps each
# step's stderr; $OUT/profile.txt one line a case.
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-minprof-out}
. tests/real/gpu/device_env.sh
export CUDA_VISIBLE_DEVICES=""
ROOT=$PWD
t() { local s=$EPOCHREALTIME; "$@"; local e=$EPOCHREALTIME; LAST=$(python3 -c "print(round($e-$s,1))"); }
one() {
  local c=$1 d="$OUT/$1"; mkdir -p "$d"; cp "$ROOT/tests/minifier/$c.py" "$d/"; cd "$d"
  export TORCHINDUCTOR_CACHE_DIR="$d/ic" PT2KIT_STORE="$d/store"
  t $PY -c 'import torch'; local imp=$LAST
  t $PY "$c.py" >script.out 2>&1; local script=$LAST
  rm -rf "$d/ic"
  t $PY -m pt2kit.capture -- $PY "$c.py" >c.ndjson 2>capture.err; local cap=$LAST IN=c.ndjson kd=-
  if grep -q accuracy <<<"$c"; then t $PY -m pt2kit.kdiff <c.ndjson >k.ndjson 2>kdiff.err; kd=$LAST; IN=k.ndjson; fi
  t $PY -m pt2kit.minify -o repro.py <$IN >m.ndjson 2>minify.err; local mi=$LAST
  local rp=-; [ -f repro.py ] && { t $PY repro.py >repro.out 2>&1; rp=$LAST; }
  echo "$c: import $imp script $script | capture $cap kdiff $kd minify $mi | repro $rp" | tee -a "$OUT/profile.txt"
  grep -E "\] " minify.err | sed "s/^/  $c /" | cut -c1-170 >>"$OUT/stages.txt"
}
for c in "$@"; do one "$c" & done; wait
cat "$OUT/stages.txt"
