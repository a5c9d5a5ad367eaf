#!/usr/bin/env bash
# Rewrites the streams in this directory from real tool runs (run from the repository root).
set -u
d=tests/streams; s=$(mktemp -d)
fxcheck examples/tinynet.py --profile npu-bf16 --inductor --store "$s" \
  | kdiff --config cpp.inject_relu_bug_TESTING_ONLY=accuracy --store "$s" > $d/demo.ndjson
guardscan packages/guardscan/tests/models/printing.py --store "$s" > $d/guards.ndjson
guardscan packages/guardscan/tests/models/branch.py --store "$s" >> $d/guards.ndjson
aotiprint --jit packages/aotiprint/tests/models/nanmodel.py --store "$s" > $d/kernels.ndjson
kdiff packages/guardscan/tests/models/crashes.py --store "$s" > $d/crash.ndjson
rm -rf "$s"
