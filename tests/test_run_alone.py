"""testkit's run_alone under a fork server (as nox runs the tests): the repro runs in a fork of the warm
server, not a fresh Python, and still cannot import pt2kit; a run whose environment differs is not forked."""

from __future__ import annotations

import subprocess
import sys

DRIVER = r"""
import json, os, sys
from pathlib import Path
from pt2kit.testkit import run_alone
d = Path(sys.argv[1])
(d / "show.py").write_text("import os, sys\nprint(json.dumps([os.getppid(), 'torch' in sys.modules, sys.argv[0], sys.path[0], os.getcwd()]))\n"
                           .replace("import os, sys", "import json, os, sys"))
(d / "bad.py").write_text("import pt2kit.runtime\n")
env = dict(os.environ)
out = {"forked": json.loads(run_alone(d / "show.py", env).stdout),
       "fresh": json.loads(run_alone(d / "show.py", {**env, "TORCH_LOGS": "graph_breaks"}).stdout)}
bad = run_alone(d / "bad.py", env)
out["bad"] = [bad.returncode, bad.stderr.splitlines()[-1]]
out["me"] = os.getpid()
print(json.dumps(out))
"""


def test_a_repro_runs_in_a_fork_of_the_warm_server_with_pt2kit_blocked(tmp_path):
    import json

    env = {k: v for k, v in __import__("os").environ.items() if k != "PT2KIT_FORKSERVER"}
    p = subprocess.run([sys.executable, "-m", "pt2kit.runtime.worker.forkserver", "--", sys.executable, "-c", DRIVER,
                        str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.splitlines()[-1])
    parent, warm, argv0, path0, cwd = out["forked"]
    # forked: its parent is the server, not the driver, and torch was imported before the script ran
    assert parent != out["me"] and warm is True
    assert (argv0, path0, cwd) == (str(tmp_path / "show.py"), str(tmp_path), str(tmp_path))
    # another environment: a fresh Python, the driver's child, torch not imported yet
    assert out["fresh"][:2] == [out["me"], False]
    assert out["bad"][0] == 1 and out["bad"][1].startswith("ModuleNotFoundError: No module named 'pt2kit.runtime'")
