//! Every struct and enum gaio-sys copies from the C headers, against the C compiler's
//! layout (build.rs runs tests/layout.c and writes its answers as constants).
use gaio_sys::*;
use std::mem::{size_of, MaybeUninit};

#[allow(non_upper_case_globals)]
mod c {
    include!(concat!(env!("OUT_DIR"), "/layout.rs"));
}

macro_rules! offset {
    ($t:ty, $f:ident) => {{
        let v = MaybeUninit::<$t>::uninit();
        let base = v.as_ptr();
        // addr_of! reads nothing: the field's address from the uninitialised value.
        let field = unsafe { std::ptr::addr_of!((*base).$f) };
        field as usize - base as usize
    }};
}

#[test]
fn structs_match_the_c_headers() {
    assert_eq!(size_of::<gaio_device_props>(), c::SIZEOF_gaio_device_props);
    assert_eq!(offset!(gaio_device_props, kind), c::OFFSET_gaio_device_props_kind);
    assert_eq!(offset!(gaio_device_props, ordinal), c::OFFSET_gaio_device_props_ordinal);
    assert_eq!(offset!(gaio_device_props, name), c::OFFSET_gaio_device_props_name);
    assert_eq!(offset!(gaio_device_props, total_memory), c::OFFSET_gaio_device_props_total_memory);
    assert_eq!(offset!(gaio_device_props, compute_major), c::OFFSET_gaio_device_props_compute_major);
    assert_eq!(offset!(gaio_device_props, compute_minor), c::OFFSET_gaio_device_props_compute_minor);
    assert_eq!(offset!(gaio_device_props, processor_count), c::OFFSET_gaio_device_props_processor_count);
    assert_eq!(offset!(gaio_device_props, max_priority), c::OFFSET_gaio_device_props_max_priority);
    assert_eq!(offset!(gaio_device_props, pitch_alignment), c::OFFSET_gaio_device_props_pitch_alignment);
    assert_eq!(size_of::<gaio_config>(), c::SIZEOF_gaio_config);
    assert_eq!(offset!(gaio_config, cpu_workers), c::OFFSET_gaio_config_cpu_workers);
    assert_eq!(offset!(gaio_config, wait_policy), c::OFFSET_gaio_config_wait_policy);
    assert_eq!(size_of::<gaio_context_options>(), c::SIZEOF_gaio_context_options);
    assert_eq!(offset!(gaio_context_options, pool_release_threshold),
               c::OFFSET_gaio_context_options_pool_release_threshold);
    assert_eq!(offset!(gaio_context_options, rng_seed), c::OFFSET_gaio_context_options_rng_seed);
    assert_eq!(size_of::<gaio_cq_entry>(), c::SIZEOF_gaio_cq_entry);
    assert_eq!(offset!(gaio_cq_entry, user_data), c::OFFSET_gaio_cq_entry_user_data);
    assert_eq!(offset!(gaio_cq_entry, status), c::OFFSET_gaio_cq_entry_status);
    assert_eq!(size_of::<gaio_tensor>(), c::SIZEOF_gaio_tensor);
    assert_eq!(offset!(gaio_tensor, buffer), c::OFFSET_gaio_tensor_buffer);
    assert_eq!(offset!(gaio_tensor, offset), c::OFFSET_gaio_tensor_offset);
    assert_eq!(offset!(gaio_tensor, dtype), c::OFFSET_gaio_tensor_dtype);
    assert_eq!(offset!(gaio_tensor, ndim), c::OFFSET_gaio_tensor_ndim);
    assert_eq!(offset!(gaio_tensor, shape), c::OFFSET_gaio_tensor_shape);
    assert_eq!(offset!(gaio_tensor, strides), c::OFFSET_gaio_tensor_strides);
    assert_eq!(offset!(gaio_tensor, layout), c::OFFSET_gaio_tensor_layout);
    assert_eq!(size_of::<gaio_model_io>(), c::SIZEOF_gaio_model_io);
    assert_eq!(offset!(gaio_model_io, name), c::OFFSET_gaio_model_io_name);
    assert_eq!(offset!(gaio_model_io, dtype), c::OFFSET_gaio_model_io_dtype);
    assert_eq!(offset!(gaio_model_io, ndim), c::OFFSET_gaio_model_io_ndim);
    assert_eq!(offset!(gaio_model_io, shape), c::OFFSET_gaio_model_io_shape);
    assert_eq!(offset!(gaio_model_io, dim_names), c::OFFSET_gaio_model_io_dim_names);
    assert_eq!(size_of::<gaio_engine_shape>(), c::SIZEOF_gaio_engine_shape);
    assert_eq!(offset!(gaio_engine_shape, name), c::OFFSET_gaio_engine_shape_name);
    assert_eq!(offset!(gaio_engine_shape, ndim), c::OFFSET_gaio_engine_shape_ndim);
    assert_eq!(offset!(gaio_engine_shape, dims), c::OFFSET_gaio_engine_shape_dims);
    assert_eq!(offset!(gaio_engine_shape, min_dims), c::OFFSET_gaio_engine_shape_min_dims);
    assert_eq!(offset!(gaio_engine_shape, max_dims), c::OFFSET_gaio_engine_shape_max_dims);
    assert_eq!(size_of::<gaio_dim3>(), c::SIZEOF_gaio_dim3);
    assert_eq!(offset!(gaio_dim3, z), c::OFFSET_gaio_dim3_z);
    assert_eq!(size_of::<gaio_arg>(), c::SIZEOF_gaio_arg);
    assert_eq!(offset!(gaio_arg, value), c::OFFSET_gaio_arg_value);
    assert_eq!(offset!(gaio_arg, size), c::OFFSET_gaio_arg_size);
    assert_eq!(offset!(gaio_arg, buffer), c::OFFSET_gaio_arg_buffer);
    assert_eq!(offset!(gaio_arg, offset), c::OFFSET_gaio_arg_offset);
    assert_eq!(size_of::<gaio_launch_info>(), c::SIZEOF_gaio_launch_info);
    assert_eq!(offset!(gaio_launch_info, grid), c::OFFSET_gaio_launch_info_grid);
    assert_eq!(offset!(gaio_launch_info, block), c::OFFSET_gaio_launch_info_block);
    assert_eq!(offset!(gaio_launch_info, shared_mem_bytes), c::OFFSET_gaio_launch_info_shared_mem_bytes);
    assert_eq!(offset!(gaio_launch_info, shared_mem), c::OFFSET_gaio_launch_info_shared_mem);
    assert_eq!(size_of::<gaio_image>(), c::SIZEOF_gaio_image);
    assert_eq!(offset!(gaio_image, buffer), c::OFFSET_gaio_image_buffer);
    assert_eq!(offset!(gaio_image, offset), c::OFFSET_gaio_image_offset);
    assert_eq!(offset!(gaio_image, dtype), c::OFFSET_gaio_image_dtype);
    assert_eq!(offset!(gaio_image, layout), c::OFFSET_gaio_image_layout);
    assert_eq!(offset!(gaio_image, batch), c::OFFSET_gaio_image_batch);
    assert_eq!(offset!(gaio_image, width), c::OFFSET_gaio_image_width);
    assert_eq!(offset!(gaio_image, height), c::OFFSET_gaio_image_height);
    assert_eq!(offset!(gaio_image, channels), c::OFFSET_gaio_image_channels);
    assert_eq!(offset!(gaio_image, row_pitch), c::OFFSET_gaio_image_row_pitch);
    assert_eq!(offset!(gaio_image, plane_pitch), c::OFFSET_gaio_image_plane_pitch);
    assert_eq!(offset!(gaio_image, image_stride), c::OFFSET_gaio_image_image_stride);
    assert_eq!(size_of::<gaio_rect>(), c::SIZEOF_gaio_rect);
    assert_eq!(offset!(gaio_rect, height), c::OFFSET_gaio_rect_height);
    assert_eq!(size_of::<gaio_preprocess_params>(), c::SIZEOF_gaio_preprocess_params);
    assert_eq!(offset!(gaio_preprocess_params, interp), c::OFFSET_gaio_preprocess_params_interp);
    assert_eq!(offset!(gaio_preprocess_params, swap_rb), c::OFFSET_gaio_preprocess_params_swap_rb);
    assert_eq!(offset!(gaio_preprocess_params, scale), c::OFFSET_gaio_preprocess_params_scale);
    assert_eq!(offset!(gaio_preprocess_params, mean), c::OFFSET_gaio_preprocess_params_mean);
    assert_eq!(offset!(gaio_preprocess_params, std), c::OFFSET_gaio_preprocess_params_std);
    assert_eq!(size_of::<gaio_engine_options>(), c::SIZEOF_gaio_engine_options);
    assert_eq!(offset!(gaio_engine_options, batch), c::OFFSET_gaio_engine_options_batch);
    assert_eq!(offset!(gaio_engine_options, precision), c::OFFSET_gaio_engine_options_precision);
    assert_eq!(offset!(gaio_engine_options, layout), c::OFFSET_gaio_engine_options_layout);
    assert_eq!(offset!(gaio_engine_options, shapes), c::OFFSET_gaio_engine_options_shapes);
    assert_eq!(offset!(gaio_engine_options, nshapes), c::OFFSET_gaio_engine_options_nshapes);
    assert_eq!(offset!(gaio_engine_options, flags), c::OFFSET_gaio_engine_options_flags);
}

#[test]
fn enums_match_the_c_headers() {
    assert_eq!(size_of::<gaio_status>(), c::SIZEOF_gaio_status);
    assert_eq!(size_of::<gaio_mem_kind>(), c::SIZEOF_gaio_mem_kind);
    assert_eq!(size_of::<gaio_device_kind>(), c::SIZEOF_gaio_device_kind);
    assert_eq!(size_of::<gaio_dtype>(), c::SIZEOF_gaio_dtype);
    assert_eq!(GAIO_ERR_USER as i64, c::VALUE_GAIO_ERR_USER);
    assert_eq!(GAIO_MEM_MANAGED as i64, c::VALUE_GAIO_MEM_MANAGED);
    assert_eq!(GAIO_DEVICE_CUDA as i64, c::VALUE_GAIO_DEVICE_CUDA);
    assert_eq!(GAIO_WAIT_BLOCK as i64, c::VALUE_GAIO_WAIT_BLOCK);
    assert_eq!(GAIO_STREAM_DEFERRED as i64, c::VALUE_GAIO_STREAM_DEFERRED);
    assert_eq!(GAIO_EVENT_DISABLE_TIMING as i64, c::VALUE_GAIO_EVENT_DISABLE_TIMING);
    assert_eq!(GAIO_INFINITE, c::VALUE_GAIO_INFINITE);
    assert_eq!(GAIO_DTYPE_S64 as i64, c::VALUE_GAIO_DTYPE_S64);
    assert_eq!(GAIO_DTYPE_BF16 as i64, c::VALUE_GAIO_DTYPE_BF16);
    assert_eq!(GAIO_TENSOR_MAX_NDIM as i64, c::VALUE_GAIO_TENSOR_MAX_NDIM);
    assert_eq!(GAIO_TENSOR_NHWC as i64, c::VALUE_GAIO_TENSOR_NHWC);
    assert_eq!(GAIO_MODEL_MAX_NDIM as i64, c::VALUE_GAIO_MODEL_MAX_NDIM);
    assert_eq!(GAIO_MODEL_PRECISION_F16_FAST as i64, c::VALUE_GAIO_MODEL_PRECISION_F16_FAST);
    assert_eq!(GAIO_MODEL_LAYOUT_NHWC as i64, c::VALUE_GAIO_MODEL_LAYOUT_NHWC);
    assert_eq!(GAIO_ENGINE_NO_CUDA_GRAPH as i64, c::VALUE_GAIO_ENGINE_NO_CUDA_GRAPH);
    assert_eq!(GAIO_LAYOUT_I420 as i64, c::VALUE_GAIO_LAYOUT_I420);
    assert_eq!(GAIO_INTERP_AREA as i64, c::VALUE_GAIO_INTERP_AREA);
    assert_eq!(GAIO_COLOR_YUV2BGR as i64, c::VALUE_GAIO_COLOR_YUV2BGR);
}

#[test]
fn the_library_links_and_answers() {
    // The header's version and the loaded library's agree on major and minor.
    let v = unsafe { gaio_version() };
    assert!(v >= 100, "gaio_version() = {}", v);
    let mut n = 0;
    assert_eq!(unsafe { gaio_device_count(&mut n) }, GAIO_OK);
    assert!(n >= 1, "device 0 is always the host");
}

#[test]
fn dlpack_structs_match_the_c_headers() {
    assert_eq!(size_of::<DLPackVersion>(), c::SIZEOF_DLPackVersion);
    assert_eq!(size_of::<DLDevice>(), c::SIZEOF_DLDevice);
    assert_eq!(offset!(DLDevice, device_id), c::OFFSET_DLDevice_device_id);
    assert_eq!(size_of::<DLDataType>(), c::SIZEOF_DLDataType);
    assert_eq!(offset!(DLDataType, bits), c::OFFSET_DLDataType_bits);
    assert_eq!(offset!(DLDataType, lanes), c::OFFSET_DLDataType_lanes);
    assert_eq!(size_of::<DLTensor>(), c::SIZEOF_DLTensor);
    assert_eq!(offset!(DLTensor, data), c::OFFSET_DLTensor_data);
    assert_eq!(offset!(DLTensor, device), c::OFFSET_DLTensor_device);
    assert_eq!(offset!(DLTensor, ndim), c::OFFSET_DLTensor_ndim);
    assert_eq!(offset!(DLTensor, dtype), c::OFFSET_DLTensor_dtype);
    assert_eq!(offset!(DLTensor, shape), c::OFFSET_DLTensor_shape);
    assert_eq!(offset!(DLTensor, strides), c::OFFSET_DLTensor_strides);
    assert_eq!(offset!(DLTensor, byte_offset), c::OFFSET_DLTensor_byte_offset);
    assert_eq!(size_of::<DLManagedTensor>(), c::SIZEOF_DLManagedTensor);
    assert_eq!(offset!(DLManagedTensor, manager_ctx), c::OFFSET_DLManagedTensor_manager_ctx);
    assert_eq!(offset!(DLManagedTensor, deleter), c::OFFSET_DLManagedTensor_deleter);
    assert_eq!(size_of::<DLManagedTensorVersioned>(), c::SIZEOF_DLManagedTensorVersioned);
    assert_eq!(offset!(DLManagedTensorVersioned, version), c::OFFSET_DLManagedTensorVersioned_version);
    assert_eq!(offset!(DLManagedTensorVersioned, manager_ctx), c::OFFSET_DLManagedTensorVersioned_manager_ctx);
    assert_eq!(offset!(DLManagedTensorVersioned, deleter), c::OFFSET_DLManagedTensorVersioned_deleter);
    assert_eq!(offset!(DLManagedTensorVersioned, flags), c::OFFSET_DLManagedTensorVersioned_flags);
    assert_eq!(offset!(DLManagedTensorVersioned, dl_tensor), c::OFFSET_DLManagedTensorVersioned_dl_tensor);
    assert_eq!(size_of::<gaio_dlpack_view>(), c::SIZEOF_gaio_dlpack_view);
    assert_eq!(offset!(gaio_dlpack_view, buffer), c::OFFSET_gaio_dlpack_view_buffer);
    assert_eq!(offset!(gaio_dlpack_view, offset), c::OFFSET_gaio_dlpack_view_offset);
    assert_eq!(offset!(gaio_dlpack_view, dtype), c::OFFSET_gaio_dlpack_view_dtype);
    assert_eq!(offset!(gaio_dlpack_view, ndim), c::OFFSET_gaio_dlpack_view_ndim);
    assert_eq!(offset!(gaio_dlpack_view, shape), c::OFFSET_gaio_dlpack_view_shape);
    assert_eq!(offset!(gaio_dlpack_view, strides), c::OFFSET_gaio_dlpack_view_strides);
    assert_eq!(offset!(gaio_dlpack_view, read_only), c::OFFSET_gaio_dlpack_view_read_only);
    assert_eq!(kDLCPU as i64, c::VALUE_kDLCPU);
    assert_eq!(kDLCUDA as i64, c::VALUE_kDLCUDA);
    assert_eq!(kDLCUDAHost as i64, c::VALUE_kDLCUDAHost);
    assert_eq!(kDLCUDAManaged as i64, c::VALUE_kDLCUDAManaged);
    assert_eq!(kDLInt as i64, c::VALUE_kDLInt);
    assert_eq!(kDLUInt as i64, c::VALUE_kDLUInt);
    assert_eq!(kDLFloat as i64, c::VALUE_kDLFloat);
    assert_eq!(DLPACK_FLAG_BITMASK_READ_ONLY as i64, c::VALUE_DLPACK_FLAG_BITMASK_READ_ONLY);
    assert_eq!(DLPACK_FLAG_BITMASK_IS_COPIED as i64, c::VALUE_DLPACK_FLAG_BITMASK_IS_COPIED);
    assert_eq!(GAIO_DLPACK_MAX_NDIM as i64, c::VALUE_GAIO_DLPACK_MAX_NDIM);
}
