#!/usr/bin/env bash
# Issue 57's corpus (tests/realbugs) through `pt2kit triage` on the GPU machine's torch 2.11 (the CUDA 13 build
# /work/t211 has too), on its CPU: CUDA_VISIBLE_DEVICES is emptied, so a bug that picks CUDA where it is present
# runs on the CPU as it does here. From the source trees; nothing from the network: msgspec's and
# pysource-minimize's wheels for Python 3.12 in .devrun/wheels (carried; see tests/real/README.md).
# JOBS bugs at once (default 8: 20 at once on its 16 cores starved every compile, and 13 of 20 ran past 470 s);
# ONLY="a b" picks bugs; STEP and TT are run.py's --timeout and --triage-timeout; PIN=N runs every bug picked at
# once instead, each on a window of N cores (below). Results under $OUT:
# table.txt and realbugs.tgz (each bug's triage folder, its log and row), checked here by unpacking it in /tmp
# (the repros name /tmp/realbugs) and running
#   PATH=/work/t211/bin:$PATH python tests/realbugs/run.py --out /tmp/realbugs --py213 PY213 --no-triage
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-realbugs-out}
. tests/real/gpu/device_env.sh
$PY -c 'import pysource_minimize' 2>/dev/null || $PY -m pip install -q --no-index --find-links .devrun/wheels \
  --target .devrun/site pysource-minimize >>"$OUT/pip.log" 2>&1 || echo "pip install pysource-minimize failed" >>"$OUT/table.txt"
# `python` in the triaged command is this interpreter, whatever the image names it
mkdir -p /tmp/pybin && printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v $PY)" >/tmp/pybin/python && chmod +x /tmp/pybin/python
export PATH=/tmp/pybin:$PATH CUDA_VISIBLE_DEVICES= PYTHONUNBUFFERED=1
start=$(date +%s)
# the commit run: a snapshot (git archive) names it in COMMIT, where git would name the checkout around it
{ cat COMMIT 2>/dev/null || git rev-parse HEAD; } >>"$OUT/table.txt" 2>/dev/null
if [ -n "${PIN:-}" ]; then
  # PIN=N: every bug at once, each its own run.py on a window of N cores (taskset), so each triage's compile
  # pools and OpenMP threads size themselves to its share, as on a small machine, not to all 16 at once
  # shellcheck disable=SC2207
  names=(${ONLY:-$(cd tests/realbugs && ls ./*.py | sed 's|^\./||; s|\.py$||' | grep -v -e '^run$' -e '^test_' -e '^_')})
  ncpu=$(nproc); i=0
  for b in "${names[@]}"; do
    first=$(( i * ncpu / ${#names[@]} )); cores=$first
    for k in $(seq 1 $(( PIN - 1 ))); do cores="$cores,$(( (first + k) % ncpu ))"; done
    echo "$b: cores $cores" >>"$OUT/table.txt"
    timeout "${LIMIT:-560}" taskset -c "$cores" $PY tests/realbugs/run.py --out /tmp/realbugs --jobs 1 \
      --timeout "${STEP:-300}" --triage-timeout "${TT:-470}" --only "$b" >"/tmp/realbugs-$b.log" 2>&1 &
    i=$(( i + 1 ))
  done
  wait
  mkdir -p /tmp/realbugs && mv /tmp/realbugs-*.log /tmp/realbugs/ 2>/dev/null
  # shellcheck disable=SC2086
  $PY tests/realbugs/run.py --out /tmp/realbugs --table ${ONLY:+--only $ONLY} >>"$OUT/table.txt" 2>&1
else
  # shellcheck disable=SC2086
  timeout "${LIMIT:-560}" $PY tests/realbugs/run.py --out /tmp/realbugs --jobs "${JOBS:-8}" --timeout "${STEP:-300}" \
    --triage-timeout "${TT:-470}" ${ONLY:+--only $ONLY} >>"$OUT/table.txt" 2>&1
fi
echo "run.py: exit $? in $(( $(date +%s) - start )) s" >>"$OUT/table.txt"
tar czf "$OUT/realbugs.tgz" -C /tmp realbugs
cat "$OUT/table.txt"
