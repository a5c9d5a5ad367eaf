"""A stand-in for a user's script run under the child boot: writes what the boot writes (the manifest
lines of pt2kit_capture_contract, a model file, a tensor file named by its sha256, a TORCH_TRACE log)
with the stdlib alone, so the parent's tests need no torch. argv: MODE (ok | segv | raise | none); segv:
killed in graph 0/0's first compiled call, as the boot marks it running (its ``running`` file).
The contract is imported as the boot imports it: from the boot folder, first on PYTHONPATH."""

import hashlib
import json
import os
import signal
import struct
import sys
import time

import pt2kit_capture_contract as contract

mode = sys.argv[1]
print("hello from the script", flush=True)
rank = int(os.environ.get("RANK", "0"))
keep = os.environ.get(contract.ENV_RANK, "0")
scratch = os.environ[contract.ENV_DIR]
here = os.path.join(scratch, f"p{os.getpid()}")
if mode != "none" and (keep == "all" or int(keep) == rank):
    os.makedirs(os.path.join(here, "t"), exist_ok=True)
    trace = os.environ["TORCH_TRACE"]
    os.makedirs(trace, exist_ok=True)
    with open(os.path.join(trace, "dedicated_log_torch_trace_x1.log"), "w") as f:
        f.write(f'V0101 00:00:00.000000 {os.getpid()} torch/_dynamo/x.py:1] {{"dynamo_start": {{}}}}\n')
    data = b"not really a tensor " + bytes([rank])
    sha = hashlib.sha256(data).hexdigest()
    with open(os.path.join(here, "t", f"{sha}.pt"), "wb") as f:
        f.write(data)
    for n, cid in enumerate(("0/0", "0/1")):
        with open(os.path.join(here, f"g{n}.py"), "w") as f:
            f.write(f"# graph {cid}\nimport torch\nmodel = torch.nn.Identity()\nexample_inputs = (torch.ones(2),)\n")
        line: contract.Line = {"compile_id": cid, "rank": rank if "RANK" in os.environ else None, "world": None, "pid": os.getpid(),
                "argv": sys.argv, "backend": "inductor", "backend_code": None, "backend_in_script": False, "mode": None, "options": {}, "dynamic": None,
                "function": "forward", "source": f"{os.path.abspath(__file__)}:12", "grad": n == 1,
                "settings": {"inductor.fallback_random": "True"}, "file": f"g{n}.py", "tensors": [f"t/{sha}.pt"],
                "inputs": [{"name": "L_x_", "dtype": "torch.float32", "shape": [2, 8], "stride": [8, 1],
                            "device": "cpu", "requires_grad": False, "value": "saved"},
                           {"name": "L_self_modules_fc_parameters_weight_", "dtype": "torch.float32",
                            "shape": [4, 8], "stride": [8, 1], "device": "cpu", "requires_grad": True,
                            "value": "seeded"}],
                "nodes": 3, "ops": {"torch.nn.functional.linear": 1}, "values": "small",
                "error": "RuntimeError: boom" if n == 1 else None, "capture_error": None,
                "selected": True, "over_run_budget": False}
        with open(os.path.join(here, contract.MANIFEST), "a") as f:
            f.write(json.dumps(line) + "\n")
        if mode == "segv":
            with open(os.path.join(here, contract.RUNNING_FILE), "wb") as f:
                f.write(struct.pack("<iii", 1, 1, 1))  # line 0's graph (seq + 1), call 1, a forward
            os.kill(os.getpid(), signal.SIGSEGV)
if mode == "raise":
    os.makedirs(here, exist_ok=True)
    with open(os.path.join(here, contract.EXIT), "w") as f:
        json.dump({"exception": "ValueError", "message": "bad batch"}, f)
    raise ValueError("bad batch")
if mode == "sleep":
    time.sleep(60)
