/* gaio-sys's layout probe (build.rs compiles and runs it): prints, as Rust constants,
 * the size and field offsets of every public struct gaio-sys declares, and the values
 * of the enums it copies, as this C compiler lays them out. */
#include <stddef.h>
#include <stdio.h>

#include "gaio/gaio.h"

#define SIZE(T) printf("pub const SIZEOF_%s: usize = %zu;\n", #T, sizeof(T))
#define OFF(T, f) printf("pub const OFFSET_%s_%s: usize = %zu;\n", #T, #f, offsetof(T, f))
#define VAL(x) printf("pub const VALUE_%s: i64 = %lld;\n", #x, (long long)(x))

int main(void) {
    SIZE(gaio_device_props);
    OFF(gaio_device_props, kind);
    OFF(gaio_device_props, ordinal);
    OFF(gaio_device_props, name);
    OFF(gaio_device_props, total_memory);
    OFF(gaio_device_props, compute_major);
    OFF(gaio_device_props, compute_minor);
    OFF(gaio_device_props, processor_count);
    OFF(gaio_device_props, max_priority);
    OFF(gaio_device_props, pitch_alignment);
    SIZE(gaio_config);
    OFF(gaio_config, cpu_workers);
    OFF(gaio_config, wait_policy);
    SIZE(gaio_context_options);
    OFF(gaio_context_options, pool_release_threshold);
    OFF(gaio_context_options, rng_seed);
    SIZE(gaio_cq_entry);
    OFF(gaio_cq_entry, user_data);
    OFF(gaio_cq_entry, status);
    SIZE(gaio_tensor);
    OFF(gaio_tensor, buffer);
    OFF(gaio_tensor, offset);
    OFF(gaio_tensor, dtype);
    OFF(gaio_tensor, ndim);
    OFF(gaio_tensor, shape);
    OFF(gaio_tensor, strides);
    OFF(gaio_tensor, layout);
    SIZE(gaio_model_io);
    OFF(gaio_model_io, name);
    OFF(gaio_model_io, dtype);
    OFF(gaio_model_io, ndim);
    OFF(gaio_model_io, shape);
    OFF(gaio_model_io, dim_names);
    SIZE(gaio_engine_shape);
    OFF(gaio_engine_shape, name);
    OFF(gaio_engine_shape, ndim);
    OFF(gaio_engine_shape, dims);
    OFF(gaio_engine_shape, min_dims);
    OFF(gaio_engine_shape, max_dims);
    SIZE(gaio_engine_options);
    OFF(gaio_engine_options, batch);
    OFF(gaio_engine_options, precision);
    OFF(gaio_engine_options, layout);
    OFF(gaio_engine_options, shapes);
    OFF(gaio_engine_options, nshapes);
    OFF(gaio_engine_options, flags);
    SIZE(gaio_image);
    OFF(gaio_image, buffer);
    OFF(gaio_image, offset);
    OFF(gaio_image, dtype);
    OFF(gaio_image, layout);
    OFF(gaio_image, batch);
    OFF(gaio_image, width);
    OFF(gaio_image, height);
    OFF(gaio_image, channels);
    OFF(gaio_image, row_pitch);
    OFF(gaio_image, plane_pitch);
    OFF(gaio_image, image_stride);
    SIZE(gaio_rect);
    OFF(gaio_rect, height);
    SIZE(gaio_preprocess_params);
    OFF(gaio_preprocess_params, interp);
    OFF(gaio_preprocess_params, swap_rb);
    OFF(gaio_preprocess_params, scale);
    OFF(gaio_preprocess_params, mean);
    OFF(gaio_preprocess_params, std);
    SIZE(gaio_dim3);
    OFF(gaio_dim3, z);
    SIZE(gaio_arg);
    OFF(gaio_arg, value);
    OFF(gaio_arg, size);
    OFF(gaio_arg, buffer);
    OFF(gaio_arg, offset);
    SIZE(gaio_launch_info);
    OFF(gaio_launch_info, grid);
    OFF(gaio_launch_info, block);
    OFF(gaio_launch_info, shared_mem_bytes);
    OFF(gaio_launch_info, shared_mem);
    SIZE(gaio_status);
    SIZE(gaio_mem_kind);
    SIZE(gaio_device_kind);
    SIZE(gaio_dtype);
    VAL(GAIO_ERR_USER);
    VAL(GAIO_MEM_MANAGED);
    VAL(GAIO_DEVICE_CUDA);
    VAL(GAIO_WAIT_BLOCK);
    VAL(GAIO_STREAM_DEFERRED);
    VAL(GAIO_EVENT_DISABLE_TIMING);
    VAL(GAIO_INFINITE);
    VAL(GAIO_DTYPE_S64);
    VAL(GAIO_TENSOR_MAX_NDIM);
    VAL(GAIO_TENSOR_NHWC);
    VAL(GAIO_MODEL_MAX_NDIM);
    VAL(GAIO_MODEL_PRECISION_F16_FAST);
    VAL(GAIO_MODEL_LAYOUT_NHWC);
    VAL(GAIO_ENGINE_NO_CUDA_GRAPH);
    VAL(GAIO_LAYOUT_I420);
    VAL(GAIO_INTERP_AREA);
    VAL(GAIO_COLOR_YUV2BGR);
    return 0;
}
