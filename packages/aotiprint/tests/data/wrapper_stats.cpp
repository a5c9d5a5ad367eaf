void AOTInductorModel::run_impl(
    AtenTensorHandle*
        input_handles, // array of input AtenTensorHandle; handles
                        // are stolen; the array itself is borrowed
    AtenTensorHandle*
        output_handles, // array for writing output AtenTensorHandle; handles
                        // will be stolen by the caller; the array itself is
                        // borrowed
    DeviceStreamType stream,
    AOTIProxyExecutorHandle proxy_executor
) {
    __check_inputs_outputs(input_handles, output_handles);
    auto inputs = steal_from_raw_handles_to_raii_handles(input_handles, 1);
    auto arg2_1 = std::move(inputs[0]);
    aoti_torch_print_tensor_handle(arg2_1, "aoti_model_inputs - arg2_1");
    [[maybe_unused]] auto& fc_weight = constants_->at(0);
    inputs.clear();
    [[maybe_unused]] auto& kernels = static_cast<AOTInductorModelKernels&>(*this->kernels_.get());
    static constexpr int64_t int_array_0[] = {8L, };
    static constexpr int64_t int_array_1[] = {1L, };
    AtenTensorHandle buf0_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(1, int_array_0, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cpu, this->device_idx_, &buf0_handle));
    RAIIAtenTensorHandle buf0(buf0_handle);
    if (_check_aoti_runtime_check_inputs_env()) { assert_size_stride(arg2_1, {4L, 8L}, {8L, 1L}, "input"); }
    aoti_torch_print_tensor_handle(buf0, "before_launch - cpp_fused_0 - buf0");
    cpp_fused_0((float*)(buf0.data_ptr()));
    aoti_torch_print_tensor_handle(buf0, "after_launch - cpp_fused_0 - buf0");
    static constexpr int64_t int_array_2[] = {4L, 8L};
    static constexpr int64_t int_array_3[] = {8L, 1L};
    AtenTensorHandle buf1_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_2, int_array_3, cached_torch_dtype_float32, cached_torch_device_type_cpu, this->device_idx_, &buf1_handle));
    RAIIAtenTensorHandle buf1(buf1_handle);
    // Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t, aten.addmm]
    static constexpr int64_t int_array_4[] = {8L, 8L};
    static constexpr int64_t int_array_5[] = {1L, 8L};
    aoti_torch_print_tensor_handle(buf1, "before_launch - aoti_torch_cpu_addmm_out - buf1");
    aoti_torch_print_tensor_handle(buf0, "before_launch - aoti_torch_cpu_addmm_out - buf0");
    aoti_torch_print_tensor_handle(arg2_1, "before_launch - aoti_torch_cpu_addmm_out - arg2_1");
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cpu_addmm_out(buf1, buf0, arg2_1, wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(fc_weight, 2, int_array_4, int_array_5, 0L)), 1L, 1L));
    aoti_torch_print_tensor_handle(buf1, "after_launch - aoti_torch_cpu_addmm_out - buf1");
    aoti_torch_print_tensor_handle(buf0, "after_launch - aoti_torch_cpu_addmm_out - buf0");
    aoti_torch_print_tensor_handle(arg2_1, "after_launch - aoti_torch_cpu_addmm_out - arg2_1");
    buf0.reset();
    static constexpr int64_t int_array_6[] = {4L, };
    AtenTensorHandle buf2_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(1, int_array_6, int_array_1, cached_torch_dtype_float32, cached_torch_device_type_cpu, this->device_idx_, &buf2_handle));
    RAIIAtenTensorHandle buf2(buf2_handle);
    AtenTensorHandle buf3_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_2, int_array_3, cached_torch_dtype_bfloat16, cached_torch_device_type_cpu, this->device_idx_, &buf3_handle));
    RAIIAtenTensorHandle buf3(buf3_handle);
    AtenTensorHandle buf4_handle;
    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(2, int_array_2, int_array_3, cached_torch_dtype_int64, cached_torch_device_type_cpu, this->device_idx_, &buf4_handle));
    RAIIAtenTensorHandle buf4(buf4_handle);
    aoti_torch_print_tensor_handle(buf1, "before_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf1");
    aoti_torch_print_tensor_handle(arg2_1, "before_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - arg2_1");
    aoti_torch_print_tensor_handle(buf2, "before_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf2");
    aoti_torch_print_tensor_handle(buf3, "before_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf3");
    aoti_torch_print_tensor_handle(buf4, "before_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf4");
    cpp_fused__to_copy_add_log_mul_relu_sub_sum_1((const float*)(buf1.data_ptr()), (const float*)(arg2_1.data_ptr()), (float*)(buf2.data_ptr()), (at::BFloat16*)(buf3.data_ptr()), (int64_t*)(buf4.data_ptr()));
    aoti_torch_print_tensor_handle(buf1, "after_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf1");
    aoti_torch_print_tensor_handle(arg2_1, "after_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - arg2_1");
    aoti_torch_print_tensor_handle(buf2, "after_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf2");
    aoti_torch_print_tensor_handle(buf3, "after_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf3");
    aoti_torch_print_tensor_handle(buf4, "after_launch - cpp_fused__to_copy_add_log_mul_relu_sub_sum_1 - buf4");
    arg2_1.reset();
    output_handles[0] = buf2.release();
    output_handles[1] = buf3.release();
    output_handles[2] = buf4.release();
} // AOTInductorModel::run_impl
} // namespace torch::aot_inductor
