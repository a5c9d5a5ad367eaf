"""The torch-free readers: the printer's output, the AOTI wrapper, the JIT wrapper, provenance."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pt2kit.aotiprint.jitwrap import instrument
from pt2kit.aotiprint.printer import parse, parse_file
from pt2kit.aotiprint.provenance import for_launch, resolve
from pt2kit.aotiprint.records import decide, from_printer, last_kernel
from pt2kit.aotiprint.wrapper import analyse, number_save_sites, save_id_of

DATA = Path(__file__).parent / "data"


def test_stats_log_gives_every_launch_and_argument_with_dtype_and_nan_counts():
    log = parse_file(str(DATA / "printer_stats.txt"))
    assert [a.name for a in log.inputs] == ["arg2_1"]
    assert [la.kernel for la in log.launches] == [
        "cpp_fused_0", "aoti_torch_cpu_addmm_out", "cpp_fused__to_copy_add_log_mul_relu_sub_sum_1"]
    last = log.launches[2]
    after = {a.name: a for a in last.after}
    assert (after["buf3"].dtype, after["buf4"].dtype, after["buf2"].dtype) == ("bfloat16", "int64", "float32")
    assert after["buf2"].shape == [4] and after["buf2"].stride == [1] and after["buf2"].numel == 4
    assert after["buf2"].nan == 4 and after["buf2"].counts_exact and math.isnan(after["buf2"].mean)
    assert after["buf3"].mean == 0.397949 and after["buf3"].max == 2.15625 and after["buf3"].nan == 0
    # buf3 before launch is garbage that happens to hold a NaN: counted from the "Columns" lines
    before = {a.name: a for a in last.before}
    assert before["buf3"].nan == 7
    assert log.last_started is None


def test_names_log_and_a_crash_half_way():
    log = parse_file(str(DATA / "printer_names.txt"))
    assert [(la.kernel, la.started, la.finished) for la in log.launches] == [
        ("cpp_fused_0", True, True), ("aoti_torch_cpu_addmm_out", True, True),
        ("cpp_fused__to_copy_add_log_mul_relu_sub_sum_1", True, True)]
    cut = parse(["[ before_launch: k0 ]", "[ after_launch: k0 ]", "[ before_launch: k1 ]"])
    assert cut.last_started is not None and cut.last_started.kernel == "k1"


def test_scalar_args_saved_files_and_same_kernel_twice():
    log = parse([
        "[  before_launch - triton_poi_fused_0 - xnumel: 256  ]",
        "[  after_launch - triton_poi_fused_0 - xnumel: 256  ]",
        "[  before_launch - triton_poi_fused_0 - xnumel: 512  ]",
        "aoti_torch_save_tensor_handle: Saved tensor to /w/tmp/aoti_torchafter_launch@3_k_buf1_cpu.pt",
    ])
    assert [la.launch for la in log.launches] == [0, 1]
    assert log.launches[1].before[0].value == 512.0
    assert log.saved == ["/w/tmp/aoti_torchafter_launch@3_k_buf1_cpu.pt"]
    assert save_id_of(log.saved[0]) == 3


def test_wrapper_marks_output_buffers_unwritten_before_their_launch():
    w = analyse((DATA / "wrapper_stats.cpp").read_text())
    assert w.modes == {"stats"}
    assert [(la.kernel, sorted(la.uninitialised())) for la in w.launches] == [
        ("cpp_fused_0", ["buf0"]),
        ("aoti_torch_cpu_addmm_out", ["buf1"]),  # buf0 was written by cpp_fused_0
        ("cpp_fused__to_copy_add_log_mul_relu_sub_sum_1", ["buf2", "buf3", "buf4"]),
    ]


def test_save_sites_are_numbered_so_files_never_overwrite():
    src = ('    aoti_torch_save_tensor_handle(buf1, "buf1", "before_launch", "k");\n'
           '    aoti_torch_save_tensor_handle(buf1, "buf1", "after_launch", "k");\n')
    out = number_save_sites(src)
    assert '"before_launch@0", "k"' in out and '"after_launch@1", "k"' in out


def test_records_from_log_and_wrapper_pin_the_first_nan_to_its_kernel():
    log = parse_file(str(DATA / "printer_stats.txt"))
    w = analyse((DATA / "wrapper_stats.cpp").read_text())
    fields = from_printer(log, w, {})
    assert fields[0].launch == -1 and fields[0].name == "aoti_model_inputs"
    before3 = next(f for f in fields if f.launch == 2 and f.when == "before")
    unwritten = {a.name: a for a in before3.args}
    assert unwritten["buf3"].uninitialised and unwritten["buf3"].stats is None  # its garbage NaN is no finding
    assert not unwritten["buf1"].uninitialised and unwritten["buf1"].stats.mean == -0.151409
    i, kind, notes = decide(fields, None, None)
    assert (fields[i].name, fields[i].launch, kind, notes) == ("cpp_fused__to_copy_add_log_mul_relu_sub_sum_1", 2, "nan", {})
    # a NaN the eager run makes too still counts once it reaches an output; one that reaches none does not
    assert decide(fields, ["nan"], ["nan"])[0] == i
    j, kind, notes = decide(fields, [], ["nan"])
    assert (j, kind) == (None, None) and notes[i].startswith("NaN that the eager run makes too")


def test_a_nan_already_in_the_inputs_is_said_as_such():
    log = parse(["[  aoti_model_inputs - arg0_1  ]:", " nan", " 1.0", "[ CPUFloatType{2} ]",
                 "Number of elements: 2", "Dtype: float32", "Mean value: nan", "Min value: nan", "Max value: nan",
                 "Requires grad: 0"])
    fields = from_printer(log, None, {})
    i, _, _ = decide(fields, ["nan"], [])
    assert (fields[i].name, fields[i].launch) == ("aoti_model_inputs", -1)


JIT_SRC = '''
cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*'], r"""...""")

class Runner:
    def call(self, args):
        arg0_1, arg1_1 = args
        args.clear()
        buf0 = empty_strided_cpu((4, 8), (8, 1), torch.float32)
        extern_kernels.addmm(arg1_1, arg0_1, arg0_1, alpha=1, beta=1, out=buf0)
        buf1 = empty_strided_cpu((4, 8), (8, 1), torch.float32)
        cpp_fused_relu_0(buf0, buf1)
        buf2 = buf0; del buf0  # reuse
        buf3 = torch.ops.aten.sort.stable(buf1, stable=False, dim=1)
        cpp_fused_relu_0(buf1, buf2)
        return (buf2, buf3)
'''


def test_jit_wrapper_gets_a_probe_around_every_launch():
    out, sites = instrument(JIT_SRC)
    assert [(s.kernel, s.args) for s in sites] == [
        ("extern_kernels.addmm", ["arg1_1", "arg0_1", "buf0"]),
        ("cpp_fused_relu_0", ["buf0", "buf1"]),
        ("aten.sort.stable", ["buf1", "buf3"]),
        ("cpp_fused_relu_0", ["buf1", "buf2"]),
    ]
    assert "_pt2kit_probe.before(0, 'extern_kernels.addmm', {'arg1_1': arg1_1, 'arg0_1': arg0_1, 'buf0': buf0}, ['buf0'])" in out
    # buf1 is written by the first relu kernel; buf2 took over buf0's memory: garbage until written
    assert "_pt2kit_probe.before(1, 'cpp_fused_relu_0', {'buf0': buf0, 'buf1': buf1}, ['buf1'])" in out
    assert "_pt2kit_probe.before(3, 'cpp_fused_relu_0', {'buf1': buf1, 'buf2': buf2}, ['buf2'])" in out
    assert out.startswith("import pt2kit.aotiprint.probe as _pt2kit_probe")
    compile(out, "w.py", "exec")


def test_provenance_gives_each_launch_its_nodes_and_user_lines():
    maps = {"postToPre": {"addmm": ["linear"], "log": ["z"]},
            "cppCodeToPost": {"aoti_torch_cpu_addmm_out:2": ["addmm"], "cpp_fused_log_1:3": ["log"],
                              "aoti_torch_cpu_addmm_out:5": ["addmm"]}}
    stacks = {"cpp_fused_log_1:3": ['File "/u/m.py", line 11, in forward\n    z = torch.log(y - 0.5)']}
    prov = resolve(maps, stacks)
    assert for_launch(prov, "cpp_fused_log_1", 0) == {"nodes": ["z"], "sources": ["/u/m.py:11"], "code": [""]}
    assert for_launch(prov, "aoti_torch_cpu_addmm_out", 1)["nodes"] == ["linear"]
    assert for_launch(prov, "nope", 0) is None


def test_the_package_says_what_is_public():
    import pt2kit.aotiprint as aotiprint
    from pt2kit.aotiprint import jitwrap, printer, records, stats

    assert aotiprint.__all__ == ["__version__", "parse_printer", "kernel_fields", "instrument_wrapper", "tensor_stats"]
    assert (aotiprint.parse_printer, aotiprint.kernel_fields, aotiprint.instrument_wrapper, aotiprint.tensor_stats) \
        == (printer.parse, records.from_printer, jitwrap.instrument, stats.tensor_stats)
    with pytest.raises(AttributeError):
        aotiprint.nothing_here  # noqa: B018


EXTERN_WRAPPER = """void AOTInductorModel::run_impl(
    printf("[ before_launch: cpp_fused_add_relu_0 ]\\n");
    cpp_fused_add_relu_0((const float*)(arg0_1.data_ptr()), (float*)(buf0.data_ptr()));
    printf("[ after_launch: cpp_fused_add_relu_0 ]\\n");
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_new_uninitialized_tensor(&buf2_handle));
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_proxy_executor_call_function(proxy_executor, 0, 0, std::array<int64_t, 0>{}.data(), 2, std::array<AtenTensorHandle, 2>{buf0, buf2}.data()));
    printf("[ before_launch: aoti_torch_cpu_addmm_out ]\\n");
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(buf3, buf2, arg2_1, 1L, 1L));
    printf("[ after_launch: aoti_torch_cpu_addmm_out ]\\n");
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu__weight_int4pack_mm(buf4, buf3));
} // AOTInductorModel::run_impl
"""


def test_a_crash_after_a_finished_launch_names_the_unprinted_extern_call_after_it():
    w = analyse(EXTERN_WRAPPER)
    assert [la.kernel for la in w.launches] == ["cpp_fused_add_relu_0", "aoti_torch_cpu_addmm_out"]
    first = parse(["[ before_launch: cpp_fused_add_relu_0 ]", "[ after_launch: cpp_fused_add_relu_0 ]"])
    assert last_kernel(first, [], w, ["aten::_grouped_mm"]) == "aoti_torch_proxy_executor_call_function(aten::_grouped_mm)"
    assert last_kernel(first, [], w, []) == "aoti_torch_proxy_executor_call_function(extern node 0)"
    assert last_kernel(first, [], None) == "cpp_fused_add_relu_0"  # no wrapper: the last launch shown
    both = parse(["[ before_launch: cpp_fused_add_relu_0 ]", "[ after_launch: cpp_fused_add_relu_0 ]",
                  "[ before_launch: aoti_torch_cpu_addmm_out ]", "[ after_launch: aoti_torch_cpu_addmm_out ]"])
    assert last_kernel(both, [], w, []) == "aoti_torch_cpu__weight_int4pack_mm"  # a shim call nothing prints
    inside = parse(["[ before_launch: cpp_fused_add_relu_0 ]"])
    assert last_kernel(inside, [], w, []) == "cpp_fused_add_relu_0"  # the launch it stopped inside
