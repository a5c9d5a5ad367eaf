#!/usr/bin/env bash
# Issue 47 on the GPU machine (torch 2.11, CUDA, Triton): `pt2kit triage` on a CUDA training script under
# Triton's planted relu bug, run from the source trees (no console scripts there: triage runs each tool as
# `python3 -m pt2kit.X` and says so). Installs nothing from the network (device_env.sh). Results under $OUT:
# the triage folder, its stderr, and summary.txt with one OK/NOT OK line per expectation.
#
# Expected: triage exit 1; every step said; the folder holds report.html, repro.py, bug-report.md and a
# stream per step; repro.py exits 1 alone; bug-report.md names aten.relu.default, holds the GPU model
# (collect_env's "GPU models") and a CUDA runtime version, and a Bisection section (a bisect record when
# minify bisects, else "Not bisected").
set -u
cd "$(dirname "$0")/../../.."  # the repository root
OUT=${OUT:-/tmp/gpu-triage-out}
. tests/real/gpu/device_env.sh
rm -rf "$OUT/triage"
check() { if eval "$2"; then echo "OK     $1"; else echo "NOT OK $1"; fi; }
start=$(date +%s)
timeout 590 $PY -m pt2kit.triage --out "$OUT/triage" -- $PY tests/real/gpu/triage_cuda.py >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" </dev/null
rc=$?
echo "triage: exit $rc in $(( $(date +%s) - start )) s" >"$OUT/summary.txt"
( cd /tmp && timeout 300 $PY "$OUT/triage/repro.py" >"$OUT/repro.txt" 2>&1; echo "repro exit $?" >>"$OUT/repro.txt" )
{
  check "triage exits 1" "[ $rc = 1 ]"
  check "the script's stdout is on stdout" "grep -q '^loss ' '$OUT/stdout.txt'"
  for s in capture guardscan kdiff minify reportgen; do check "step $s said" "grep -q '] $s: ' '$OUT/stderr.txt'"; done
  for f in report.html repro.py bug-report.md capture.ndjson kdiff.ndjson minify.ndjson; do
    check "$f written" "[ -s '$OUT/triage/$f' ]"; done
  check "repro.py exits 1 alone" "grep -q '^repro exit 1' '$OUT/repro.txt'"
  check "bug-report.md names aten.relu.default" "head -1 '$OUT/triage/bug-report.md' | grep -q 'aten.relu.default'"
  check "bug-report.md names the GPU" "grep -q '^GPU models: ' '$OUT/triage/bug-report.md'"
  check "bug-report.md has the CUDA runtime" "grep -q '^CUDA runtime version: ' '$OUT/triage/bug-report.md'"
  check "bug-report.md has a bisection section" "grep -q '^## Bisection' '$OUT/triage/bug-report.md'"
} >>"$OUT/summary.txt"
cat "$OUT/summary.txt"; tail -5 "$OUT/stderr.txt"
