"""aotiprint as a user runs it: real AOTI packages, real torch.compile, a child process each."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import msgspec
import pytest

MODELS = Path(__file__).parent / "models"
NAN_LINE = next(i for i, line in enumerate((MODELS / "nanmodel.py").read_text().splitlines(), 1) if "torch.log" in line)


def aotiprint(*args: str, cwd: Path) -> tuple[int, list[dict], str]:
    p = subprocess.run([sys.executable, "-m", "pt2kit.aotiprint", *args], capture_output=True, cwd=cwd, timeout=600)
    return p.returncode, [msgspec.json.decode(line) for line in p.stdout.splitlines()], p.stderr.decode()


@pytest.fixture(scope="module")
def stats_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("stats")
    code, recs, err = aotiprint(str(MODELS / "nanmodel.py"), "--save-package", "m.pt2", cwd=d)
    return d, code, recs, err


@pytest.mark.xdist_group("stats_run")  # one worker compiles the package for all three
def test_stats_records_every_kernel_with_dtypes_and_pins_the_planted_nan(stats_run):
    d, code, recs, err = stats_run
    assert code == 1, err
    kernels = [r for r in recs if r["kind"] == "kernel"]
    names = [r["name"] for r in kernels if r["launch"] >= 0]
    assert "aoti_torch_cpu_addmm_out" in names
    after_dtypes = {a["dtype"] for r in kernels if r.get("when", "after") == "after" for a in r["args"]}
    assert {"float32", "bfloat16", "int64"} <= after_dtypes
    # output buffers before their launch: marked, no stats
    unwritten = [a for r in kernels if r.get("when", "after") == "before" for a in r["args"] if a.get("uninitialised")]
    assert unwritten and all("stats" not in a for a in unwritten)
    bad = [r for r in kernels if r.get("finding")]
    assert len(bad) == 1 and bad[0].get("when", "after") == "after" and "log" in bad[0]["name"]
    assert f"nanmodel.py:{NAN_LINE}" in " ".join(bad[0]["sources"])
    assert any(a["stats"].get("nan") == 4 and a["shape"] == [4] for a in bad[0]["args"] if "stats" in a)
    assert f"first NaN: kernel {bad[0]['name']}" in err
    assert (d / "m.pt2").is_file()


@pytest.mark.xdist_group("stats_run")  # one worker compiles the package for all three
def test_package_rerun_with_a_kernel_filter_keeps_only_that_kernel(stats_run):
    d = stats_run[0]
    code, recs, err = aotiprint("m.pt2", "--inputs", str(MODELS / "nanmodel.py"), "--kernels",
                                "aoti_torch_cpu_addmm_out", cwd=d)
    assert code == 0, err
    kernels = [r for r in recs if r["kind"] == "kernel" and r["launch"] >= 0]
    assert kernels and {r["name"] for r in kernels} == {"aoti_torch_cpu_addmm_out"}
    assert [r.get("when", "after") for r in kernels] == ["before", "after"]


@pytest.mark.xdist_group("stats_run")  # one worker compiles the package for all three
def test_a_package_whose_library_segfaults_on_load_is_a_crash_at_stage_load(stats_run, tmp_path):
    """What the GPU machine's torch 2.11 does to every package: a segfault inside the load."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the crashing library")
    (tmp_path / "boom.c").write_text("#include <signal.h>\n"
                                     "__attribute__((constructor)) static void boom(void) { raise(SIGSEGV); }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(tmp_path / "boom.so"), str(tmp_path / "boom.c")], check=True)
    with zipfile.ZipFile(stats_run[0] / "m.pt2") as src, zipfile.ZipFile(tmp_path / "bad.pt2", "w") as dst:
        for item in src.infolist():
            data = (tmp_path / "boom.so").read_bytes() if item.filename.endswith(".so") else src.read(item)
            dst.writestr(item, data)
    code, recs, err = aotiprint("bad.pt2", "--inputs", str(MODELS / "nanmodel.py"), cwd=tmp_path)
    assert code == 3, err
    crash = recs[-1]
    assert crash["kind"] == "crash" and crash["stage"] == "load" and crash.get("signal") == "SIGSEGV", crash
    assert recs[0]["kind"] == "header"
    assert "crashed during load: SIGSEGV" in err and "--jit instruments" in err


def test_a_crash_in_a_kernel_is_a_crash_record_with_stage_and_last_kernel(tmp_path):
    # --mode: --detail's old name, kept as a hidden alias
    code, recs, err = aotiprint(str(MODELS / "nanmodel.py"), "--mode", "names", "--config",
                                "cpp.inject_relu_bug_TESTING_ONLY=runtime_error", cwd=tmp_path)
    assert code == 3, err
    crash = recs[-1]
    assert crash["kind"] == "crash" and crash["stage"] == "run"
    assert "relu" in crash["last_kernel"]
    started = [r for r in recs if r["kind"] == "kernel"]
    assert started[-1].get("when") == "before" and started[-1]["name"] == crash["last_kernel"]


def test_a_crash_in_an_extern_call_the_printer_does_not_wrap_names_that_call(tmp_path):
    """A custom op runs through the proxy executor, unprinted: the crash is in it, not in the fused
    kernel whose after_launch is the printer's last line (issue 37)."""
    code, recs, err = aotiprint(str(MODELS / "externcrash.py"), "--detail", "names", cwd=tmp_path)
    assert code == 3, err
    crash = recs[-1]
    assert crash["kind"] == "crash" and crash["stage"] == "run" and "boom: the custom op failed" in crash["message"]
    assert crash["last_kernel"] == "aoti_torch_proxy_executor_call_function(pt2kit_test::boom)", crash
    ran = [r for r in recs if r["kind"] == "kernel"]  # the printer's output: the fused kernel before it, finished
    assert [(r["launch"], r.get("when", "after")) for r in ran] == [(0, "before"), (0, "after")]
    assert ran[0]["name"].startswith("cpp_fused") and ran[0]["name"] != crash["last_kernel"]


def test_jit_probes_every_kernel_and_pins_the_nan(tmp_path):
    code, recs, err = aotiprint(str(MODELS / "nanmodel.py"), "--jit", cwd=tmp_path)
    assert code == 1, err
    kernels = [r for r in recs if r["kind"] == "kernel"]
    extern = [r for r in kernels if r["name"] == "extern_kernels.addmm" and r.get("when", "after") == "after"]
    assert extern and any(a["name"].startswith("buf") and a["stats"]["numel"] == 32 for a in extern[0]["args"])
    bad = [r for r in kernels if r.get("finding")]
    assert len(bad) == 1 and bad[0]["name"].startswith("cpp_fused") and "log" in bad[0]["name"]
    assert f"nanmodel.py:{NAN_LINE}" in " ".join(bad[0]["sources"])
    nan_args = [a for a in bad[0]["args"] if a.get("stats", {}).get("nan")]
    assert nan_args and nan_args[0]["dtype"] == "float32"


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    code, recs, err = aotiprint("nope.pt2", "--inputs", "x.py", cwd=tmp_path)
    assert code == 2 and "nope.pt2: no such package" in err and recs == []
    code, _, err = aotiprint("m.pt2", cwd=tmp_path)
    assert code == 2 and "--inputs FILE.py[:NAME]" in err
    code, _, err = aotiprint(str(MODELS / "clean.py"), "--inputs", "x.py", cwd=tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1
    code, recs, err = aotiprint(str(MODELS / "clean.py"), "--mode", "names", "--detail", "save", cwd=tmp_path)
    assert code == 2 and recs == [] and err == "aotiprint: error: --mode is --detail's old name: give one\n"


def test_save_package_is_checked_before_anything_runs_and_never_lands_on_an_input(tmp_path):
    model = tmp_path / "m.py"
    shutil.copy(MODELS / "clean.py", model)
    before = model.read_bytes()
    (tmp_path / "m.pt2").symlink_to(model)
    for args, line in [
        (("--save-package", "m.pt2"), f"--save-package m.pt2: is the same file as the model file {model} "
         f"(it resolves to {model}); writing it would overwrite an input"),
        (("--save-package", "m.py/m.pt2"), f"--save-package m.py/m.pt2: {model} is not a directory"),
        (("--timeout", "inf"), "--timeout inf: expected a finite number > 0 and <= 604800"),
    ]:
        code, recs, err = aotiprint(str(model), *args, cwd=tmp_path)
        assert code == 2 and recs == [], err
        assert err == f"aotiprint: error: {line}\n"
    code, recs, err = aotiprint("m2.pt2", "--inputs", str(model), "--save-package", "k.pt2", cwd=tmp_path)
    assert code == 2 and err == ("aotiprint: error: --save-package keeps the package compiled from a MODEL.py; "
                                 "m2.pt2 is one already\n")
    assert model.read_bytes() == before


def test_help_does_not_import_torch():
    code = ("import sys\nfrom pt2kit.aotiprint.cli import app\n"
            "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert not {'torch', 'matplotlib', 'triton', 'rich'} & set(sys.modules)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "Exit 0 clean, 1 NaN/Inf found" in p.stdout
    assert "--detail [names|stats|save]" in p.stdout and "--mode" not in p.stdout  # the old name is hidden


def test_a_kernels_filter_that_matches_nothing_is_a_warning_and_exit_2(tmp_path):
    code, recs, err = aotiprint(str(MODELS / "nanmodel.py"), "--jit", "--kernels", "no_such_kernel", cwd=tmp_path)
    assert code == 2, err
    assert "warning: --kernels: no kernel named no_such_kernel ran" in err
    assert not [r for r in recs if r["kind"] == "kernel"]
