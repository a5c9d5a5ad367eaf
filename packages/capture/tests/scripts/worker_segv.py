"""A worker process whose compiled code segfaults (issue 44): the command is this script's main process,
which sees its worker die (exit code -11) and exits 1 itself; the worker's own exit status is never the
command's, as under torchrun or mp.spawn."""
import ctypes
import multiprocessing
import sys

import torch


def segv(gm, example_inputs):
    def run(*args):
        ctypes.string_at(0)  # a kernel's bad read
    return run


def worker():
    torch.compile(lambda x: torch.relu(x) * 2, backend=segv)(torch.ones(2))


if __name__ == "__main__":
    p = multiprocessing.get_context("spawn").Process(target=worker)
    p.start()
    p.join()
    print("worker exit code", p.exitcode)
    sys.exit(1)
