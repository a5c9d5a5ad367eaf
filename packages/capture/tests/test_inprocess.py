"""``with pt2kit.capture() as cap:`` in this process, without a kernel: the records a block's compiles and
its exception give, and the process as it was before the block (the boot's patches put back, Dynamo's
cache of a function compiled before the block kept, of one compiled in it dropped). One capture, shared."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

pytestmark = pytest.mark.xdist_group("capture-inprocess")


def before_block(x):
    return x.sin() + 1


def in_block(x):
    return x.cos() * 2  # the graph's line


def branchy(x, n):  # a guard on n: compiled again for n=3
    if n > 2:
        return x.sin()
    return x.cos()


def after_block(x):
    return x.tan() - 1


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    import torch
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list as entries
    from torch._dynamo.repro import after_dynamo

    import pt2kit.capture

    x = torch.randn(3)
    torch.compile(before_block, backend="eager")(x)
    seen = {"wrap": after_dynamo.wrap_backend_debug, "meta_path": list(sys.meta_path), "path": list(sys.path),
            "env": dict(os.environ), "before_entries": len(entries(before_block.__code__)),
            "rng": torch.get_rng_state()}
    store = tmp_path_factory.mktemp("store")
    with pytest.raises(ValueError, match="the block's own error"):
        with pt2kit.capture(store=store, quiet=True) as cap:
            seen["inside"] = after_dynamo.wrap_backend_debug
            torch.compile(in_block, backend="eager")(x)
            seen["in_block_entries"] = len(entries(in_block.__code__))
            twice = torch.compile(branchy, backend="eager")
            twice(x, 1), twice(x, 3)
            late = torch.compile(after_block, backend="eager")  # its backend wrapped, first called after the block
            raise ValueError("the block's own error")
    seen.update(after_wrap=after_dynamo.wrap_backend_debug, after_meta_path=list(sys.meta_path), after_path=list(sys.path),
                after_env=dict(os.environ), after_before_entries=len(entries(before_block.__code__)),
                after_in_block_entries=len(entries(in_block.__code__)), late=torch.equal(late(x), after_block(x)),
                late_lines=importlib.import_module("pt2kit_capture_manifest")._STATE["seq"],
                same_rng=torch.equal(torch.get_rng_state(), seen["rng"]))  # the block draws none: capture neither
    return cap, seen, store


def test_a_graph_compiled_in_the_block_is_a_model_record_naming_its_line(captured):
    cap, _, store = captured
    model, *_ = cap.records.of("model")
    assert model.captured.backend == "eager" and model.captured.function == "in_block"
    assert model.captured.source == f"{__file__}:{in_block.__code__.co_firstlineno}"
    assert model.file.startswith(str(store)) and os.path.isfile(model.file)
    assert not list(store.glob(".capture-*"))  # the scratch dir is gone


def test_the_blocks_exception_is_a_crash_record_and_still_raised(captured):
    cap, _, _ = captured
    (crash,) = cap.records.of("crash")
    assert (crash.exception, crash.message, crash.stage) == ("ValueError", "the block's own error", "run")


def test_after_the_block_the_process_is_as_before_it(captured):
    import pt2kit_capture_process as process

    cap, seen, _ = captured
    assert seen["inside"] is not seen["wrap"] and seen["after_wrap"] is seen["wrap"]
    assert seen["after_meta_path"] == seen["meta_path"] and seen["after_path"] == seen["path"]
    assert seen["after_env"] == seen["env"] and seen["same_rng"] and not process.UNDO
    # Dynamo's caches as the user had them: the block's compile (through capture's wrappers) dropped
    assert seen["in_block_entries"] == 1 and seen["after_in_block_entries"] == 0
    assert seen["after_before_entries"] == seen["before_entries"] == 1
    # a function torch.compile wrapped in the block, compiled after it: its backend alone, nothing recorded
    assert seen["late"] and seen["late_lines"] == 0 and len(cap.records.of("model")) == 3


def test_the_stream_goes_to_a_file_the_pipes_read(captured, tmp_path):
    from pt2kit.schema import read_stream

    cap, _, _ = captured
    path = cap.write(tmp_path / "run.ndjson")
    assert path.read_bytes() == cap.records.stream
    assert [line.kind for line in read_stream([str(path)])] == ["header", "model", "model", "model", "crash"]
    with pytest.raises(ValueError, match="expected one of kdiff"):
        cap.records.run("rm")


def test_guardscan_on_the_block_reads_its_trace_and_names_the_recompile(captured):
    cap, _, _ = captured
    got = cap.guardscan("--quiet")
    (recompile,) = got.of("recompile")
    assert recompile.source == f"{__file__}:{branchy.__code__.co_firstlineno + 1}" and recompile.guard == "n == 1"
    assert got.exit_code == 1  # a finding is data: no exception


def test_a_process_pt2kit_capture_runs_is_refused_a_second_capture(captured, monkeypatch, tmp_path):
    import pt2kit.capture

    monkeypatch.setenv("PT2KIT_CAPTURE_DIR", str(tmp_path / "outer"))  # what `pt2kit capture -- python s.py` sets
    with pytest.raises(RuntimeError, match="being captured already"):
        with pt2kit.capture(store=tmp_path / "store"):
            pass
    from pt2kit.capture.drive import BOOT

    assert not (tmp_path / "store").exists() and str(BOOT) not in sys.path
