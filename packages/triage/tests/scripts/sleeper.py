"""A script that says it started (a file, the test's signal to send Ctrl-C), prints a line on stdout and one
on stderr, then sleeps: what triage's Ctrl-C and stdout tests run. No torch: it starts fast."""

import sys
import time
from pathlib import Path

print("sleeper: out", flush=True)
print("sleeper: err", file=sys.stderr, flush=True)
if len(sys.argv) > 1:
    Path(sys.argv[1]).write_text("started")
    time.sleep(120)
