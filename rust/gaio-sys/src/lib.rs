//! Raw declarations of gaio's C API: the core (status, devices, contexts, streams,
//! events, buffers, copies, futures, completion queues), kernels and libraries, image
//! ops and the model stage
//! (tensors, models, engines, execution contexts), matching `include/gaio/*.h`.
//! Every struct here is `#[repr(C)]` and checked against the C compiler's layout by
//! tests/layout.rs. Safe wrappers live in the `gaio` crate.
#![allow(non_camel_case_types, non_upper_case_globals)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

pub type gaio_status = c_int;
pub const GAIO_OK: gaio_status = 0;
pub const GAIO_ERR_INVALID_ARG: gaio_status = 1;
pub const GAIO_ERR_NO_MEMORY: gaio_status = 2;
pub const GAIO_ERR_NOT_READY: gaio_status = 3;
pub const GAIO_ERR_TIMEOUT: gaio_status = 4;
pub const GAIO_ERR_NOT_SUPPORTED: gaio_status = 5;
pub const GAIO_ERR_NOT_FOUND: gaio_status = 6;
pub const GAIO_ERR_STATE: gaio_status = 7;
pub const GAIO_ERR_DEVICE: gaio_status = 8;
pub const GAIO_ERR_DRIVER: gaio_status = 9;
pub const GAIO_ERR_SYSTEM: gaio_status = 10;
pub const GAIO_ERR_CANCELLED: gaio_status = 11;
pub const GAIO_ERR_USER: gaio_status = 12;

/// Timeouts are nanoseconds: 0 polls, GAIO_INFINITE waits until done.
pub const GAIO_INFINITE: i64 = i64::MAX;

#[repr(C)]
pub struct gaio_context {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_stream {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_event {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_buffer {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_future {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_cq {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_kernel {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_library {
    _opaque: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gaio_dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_arg {
    pub value: *const c_void,
    pub size: usize,
    pub buffer: *mut gaio_buffer,
    pub offset: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_launch_info {
    pub grid: gaio_dim3,
    pub block: gaio_dim3,
    pub shared_mem_bytes: usize,
    pub shared_mem: *mut c_void,
}

pub type gaio_host_kernel = Option<unsafe extern "C" fn(info: *const gaio_launch_info, args: *const *mut c_void)
                                                        -> gaio_status>;

pub type gaio_device_kind = c_int;
pub const GAIO_DEVICE_HOST: gaio_device_kind = 0;
pub const GAIO_DEVICE_CUDA: gaio_device_kind = 1;

pub type gaio_wait_policy = c_int;
pub const GAIO_WAIT_HYBRID: gaio_wait_policy = 0;
pub const GAIO_WAIT_SPIN: gaio_wait_policy = 1;
pub const GAIO_WAIT_BLOCK: gaio_wait_policy = 2;

pub type gaio_mem_kind = c_int;
pub const GAIO_MEM_DEVICE: gaio_mem_kind = 0;
pub const GAIO_MEM_HOST: gaio_mem_kind = 1;
pub const GAIO_MEM_PINNED: gaio_mem_kind = 2;
pub const GAIO_MEM_MANAGED: gaio_mem_kind = 3;

pub const GAIO_STREAM_DEFERRED: c_uint = 1 << 0;
pub const GAIO_EVENT_DISABLE_TIMING: c_uint = 1 << 0;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_device_props {
    pub kind: gaio_device_kind,
    pub ordinal: c_int,
    pub name: [c_char; 128],
    pub total_memory: u64,
    pub compute_major: c_int,
    pub compute_minor: c_int,
    pub processor_count: c_int,
    pub max_priority: c_int,
    pub pitch_alignment: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct gaio_config {
    pub cpu_workers: c_int,
    pub wait_policy: gaio_wait_policy,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct gaio_context_options {
    pub pool_release_threshold: usize,
    pub rng_seed: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_cq_entry {
    pub user_data: *mut c_void,
    pub status: gaio_status,
}

pub type gaio_dtype = c_int;
pub const GAIO_DTYPE_U8: gaio_dtype = 1;
pub const GAIO_DTYPE_U16: gaio_dtype = 2;
pub const GAIO_DTYPE_S16: gaio_dtype = 3;
pub const GAIO_DTYPE_F16: gaio_dtype = 4;
pub const GAIO_DTYPE_F32: gaio_dtype = 5;
pub const GAIO_DTYPE_S32: gaio_dtype = 6;
pub const GAIO_DTYPE_S64: gaio_dtype = 7;
pub const GAIO_DTYPE_BF16: gaio_dtype = 8;

pub const GAIO_TENSOR_MAX_NDIM: usize = 5;
pub type gaio_tensor_layout = c_int;
pub const GAIO_TENSOR_ROW_MAJOR: gaio_tensor_layout = 0;
pub const GAIO_TENSOR_NHWC: gaio_tensor_layout = 1;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_tensor {
    pub buffer: *mut gaio_buffer,
    pub offset: usize,
    pub dtype: gaio_dtype,
    pub ndim: i32,
    pub shape: [i64; GAIO_TENSOR_MAX_NDIM],
    pub strides: [i64; GAIO_TENSOR_MAX_NDIM],
    pub layout: gaio_tensor_layout,
}

#[repr(C)]
pub struct gaio_model {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_engine {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct gaio_model_exec {
    _opaque: [u8; 0],
}

pub const GAIO_MODEL_MAX_NDIM: usize = 8;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_model_io {
    pub name: *const c_char,
    pub dtype: gaio_dtype,
    pub ndim: i32,
    pub shape: [i64; GAIO_MODEL_MAX_NDIM],
    pub dim_names: [*const c_char; GAIO_MODEL_MAX_NDIM],
}

pub type gaio_model_precision = c_int;
pub const GAIO_MODEL_PRECISION_AUTO: gaio_model_precision = 0;
pub const GAIO_MODEL_PRECISION_MODEL: gaio_model_precision = 1;
pub const GAIO_MODEL_PRECISION_F16: gaio_model_precision = 2;
pub const GAIO_MODEL_PRECISION_F16_FAST: gaio_model_precision = 3;

pub type gaio_model_layout = c_int;
pub const GAIO_MODEL_LAYOUT_AUTO: gaio_model_layout = 0;
pub const GAIO_MODEL_LAYOUT_NCHW: gaio_model_layout = 1;
pub const GAIO_MODEL_LAYOUT_NHWC: gaio_model_layout = 2;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_engine_shape {
    pub name: *const c_char,
    pub ndim: i32,
    pub dims: [i64; GAIO_MODEL_MAX_NDIM],
    pub min_dims: [i64; GAIO_MODEL_MAX_NDIM],
    pub max_dims: [i64; GAIO_MODEL_MAX_NDIM],
}

pub const GAIO_ENGINE_NO_TUNE: u32 = 1 << 0;
pub const GAIO_ENGINE_NO_CUDA_GRAPH: u32 = 1 << 1;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_engine_options {
    pub batch: i64,
    pub precision: gaio_model_precision,
    pub layout: gaio_model_layout,
    pub shapes: *const gaio_engine_shape,
    pub nshapes: i32,
    pub flags: u32,
}

pub type gaio_layout = c_int;
pub const GAIO_LAYOUT_HWC: gaio_layout = 1;
pub const GAIO_LAYOUT_CHW: gaio_layout = 2;
pub const GAIO_LAYOUT_NV12: gaio_layout = 3;
pub const GAIO_LAYOUT_I420: gaio_layout = 4;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_image {
    pub buffer: *mut gaio_buffer,
    pub offset: usize,
    pub dtype: gaio_dtype,
    pub layout: gaio_layout,
    pub batch: i32,
    pub width: i32,
    pub height: i32,
    pub channels: i32,
    pub row_pitch: usize,
    pub plane_pitch: usize,
    pub image_stride: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gaio_rect {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

pub type gaio_interp = c_int;
pub const GAIO_INTERP_NEAREST: gaio_interp = 0;
pub const GAIO_INTERP_NEAREST_EXACT: gaio_interp = 1;
pub const GAIO_INTERP_LINEAR: gaio_interp = 2;
pub const GAIO_INTERP_CUBIC: gaio_interp = 3;
pub const GAIO_INTERP_AREA: gaio_interp = 4;

pub type gaio_color = c_int;
pub const GAIO_COLOR_SWAP_RB: gaio_color = 1;
pub const GAIO_COLOR_RGB2GRAY: gaio_color = 2;
pub const GAIO_COLOR_BGR2GRAY: gaio_color = 3;
pub const GAIO_COLOR_GRAY2RGB: gaio_color = 4;
pub const GAIO_COLOR_RGB2RGBA: gaio_color = 5;
pub const GAIO_COLOR_RGBA2RGB: gaio_color = 6;
pub const GAIO_COLOR_RGB2BGRA: gaio_color = 7;
pub const GAIO_COLOR_RGBA2BGR: gaio_color = 8;
pub const GAIO_COLOR_YUV2RGB: gaio_color = 9;
pub const GAIO_COLOR_YUV2BGR: gaio_color = 10;

pub type gaio_yuv = c_int;
pub const GAIO_YUV_BT601_LIMITED: gaio_yuv = 0;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gaio_preprocess_params {
    pub interp: gaio_interp,
    pub swap_rb: i32,
    pub scale: f32,
    pub mean: [f32; 4],
    pub std: [f32; 4],
}

// ---- DLPack 1.1 (include/gaio/dlpack.h; ABI of the official dlpack.h) ----------

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

pub type DLDeviceType = c_int;
pub const kDLCPU: DLDeviceType = 1;
pub const kDLCUDA: DLDeviceType = 2;
pub const kDLCUDAHost: DLDeviceType = 3;
pub const kDLCUDAManaged: DLDeviceType = 13;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: DLDeviceType,
    pub device_id: i32,
}

pub const kDLInt: u8 = 0;
pub const kDLUInt: u8 = 1;
pub const kDLFloat: u8 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensor)>,
}

pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;

#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(self_: *mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

pub const GAIO_DLPACK_MAX_NDIM: usize = 8;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct gaio_dlpack_view {
    pub buffer: *mut gaio_buffer,
    pub offset: usize,
    pub dtype: gaio_dtype,
    pub ndim: i32,
    pub shape: [i64; GAIO_DLPACK_MAX_NDIM],
    pub strides: [i64; GAIO_DLPACK_MAX_NDIM],
    pub read_only: i32,
}

pub type gaio_future_fn = Option<unsafe extern "C" fn(fut: *mut gaio_future, status: gaio_status, user: *mut c_void)>;

extern "C" {
    pub fn gaio_version() -> c_int;
    pub fn gaio_status_string(status: gaio_status) -> *const c_char;
    pub fn gaio_last_error() -> *const c_char;

    pub fn gaio_configure(config: *const gaio_config) -> gaio_status;
    pub fn gaio_shutdown() -> gaio_status;
    pub fn gaio_device_count(count: *mut c_int) -> gaio_status;
    pub fn gaio_device_get_props(device: c_int, props: *mut gaio_device_props) -> gaio_status;

    pub fn gaio_context_create(device: c_int, options: *const gaio_context_options, out: *mut *mut gaio_context)
        -> gaio_status;
    pub fn gaio_context_retain(ctx: *mut gaio_context) -> gaio_status;
    pub fn gaio_context_release(ctx: *mut gaio_context) -> gaio_status;
    pub fn gaio_context_device(ctx: *const gaio_context, device: *mut c_int) -> gaio_status;
    pub fn gaio_context_synchronize(ctx: *mut gaio_context) -> gaio_status;

    pub fn gaio_stream_create(ctx: *mut gaio_context, priority: c_int, flags: c_uint, out: *mut *mut gaio_stream)
        -> gaio_status;
    pub fn gaio_stream_wrap(ctx: *mut gaio_context, native_stream: *mut c_void, flags: c_uint,
                            out: *mut *mut gaio_stream) -> gaio_status;
    pub fn gaio_stream_retain(stream: *mut gaio_stream) -> gaio_status;
    pub fn gaio_stream_release(stream: *mut gaio_stream) -> gaio_status;
    pub fn gaio_stream_native(stream: *mut gaio_stream, native: *mut *mut c_void) -> gaio_status;
    pub fn gaio_stream_priority(stream: *mut gaio_stream, priority: *mut c_int) -> gaio_status;
    pub fn gaio_stream_flags(stream: *mut gaio_stream, flags: *mut c_uint) -> gaio_status;
    pub fn gaio_stream_query(stream: *mut gaio_stream) -> gaio_status;
    pub fn gaio_stream_synchronize(stream: *mut gaio_stream) -> gaio_status;
    pub fn gaio_stream_wait_event(stream: *mut gaio_stream, event: *mut gaio_event) -> gaio_status;

    pub fn gaio_event_create(ctx: *mut gaio_context, flags: c_uint, out: *mut *mut gaio_event) -> gaio_status;
    pub fn gaio_event_retain(event: *mut gaio_event) -> gaio_status;
    pub fn gaio_event_release(event: *mut gaio_event) -> gaio_status;
    pub fn gaio_event_record(event: *mut gaio_event, stream: *mut gaio_stream) -> gaio_status;
    pub fn gaio_event_query(event: *mut gaio_event) -> gaio_status;
    pub fn gaio_event_synchronize(event: *mut gaio_event) -> gaio_status;
    pub fn gaio_event_elapsed_ms(start: *mut gaio_event, end: *mut gaio_event, ms: *mut f32) -> gaio_status;

    pub fn gaio_buffer_alloc(ctx: *mut gaio_context, kind: gaio_mem_kind, size: usize, out: *mut *mut gaio_buffer)
        -> gaio_status;
    pub fn gaio_buffer_alloc_async(stream: *mut gaio_stream, kind: gaio_mem_kind, size: usize,
                                   out: *mut *mut gaio_buffer) -> gaio_status;
    pub fn gaio_buffer_retain(buf: *mut gaio_buffer) -> gaio_status;
    pub fn gaio_buffer_release(buf: *mut gaio_buffer) -> gaio_status;
    pub fn gaio_buffer_size(buf: *const gaio_buffer, size: *mut usize) -> gaio_status;
    pub fn gaio_buffer_kind(buf: *const gaio_buffer, kind: *mut gaio_mem_kind) -> gaio_status;
    pub fn gaio_buffer_device(buf: *const gaio_buffer, device: *mut c_int) -> gaio_status;
    pub fn gaio_buffer_device_ptr(buf: *const gaio_buffer, ptr: *mut *mut c_void) -> gaio_status;
    pub fn gaio_buffer_host_ptr(buf: *const gaio_buffer, ptr: *mut *mut c_void) -> gaio_status;

    pub fn gaio_memcpy_async(stream: *mut gaio_stream, dst: *mut gaio_buffer, dst_offset: usize,
                             src: *mut gaio_buffer, src_offset: usize, bytes: usize) -> gaio_status;
    pub fn gaio_memset_async(stream: *mut gaio_stream, dst: *mut gaio_buffer, offset: usize, value: c_int,
                             bytes: usize) -> gaio_status;

    pub fn gaio_future_fence(stream: *mut gaio_stream, out: *mut *mut gaio_future) -> gaio_status;
    pub fn gaio_future_from_event(event: *mut gaio_event, out: *mut *mut gaio_future) -> gaio_status;
    pub fn gaio_future_join(futures: *const *mut gaio_future, count: usize, out: *mut *mut gaio_future)
        -> gaio_status;
    pub fn gaio_future_retain(fut: *mut gaio_future) -> gaio_status;
    pub fn gaio_future_release(fut: *mut gaio_future) -> gaio_status;
    pub fn gaio_future_wait(fut: *mut gaio_future, timeout_ns: i64) -> gaio_status;
    pub fn gaio_future_poll(fut: *mut gaio_future) -> gaio_status;
    pub fn gaio_future_message(fut: *mut gaio_future) -> *const c_char;
    pub fn gaio_future_then(fut: *mut gaio_future, f: gaio_future_fn, user: *mut c_void) -> gaio_status;

    pub fn gaio_dtype_size(dtype: gaio_dtype) -> usize;

    pub fn gaio_kernel_register(name: *const c_char, f: gaio_host_kernel, nargs: usize, arg_sizes: *const usize,
                                out: *mut *mut gaio_kernel) -> gaio_status;
    pub fn gaio_kernel_unregister(name: *const c_char) -> gaio_status;
    pub fn gaio_kernel_find(name: *const c_char, out: *mut *mut gaio_kernel) -> gaio_status;
    pub fn gaio_kernel_retain(kernel: *mut gaio_kernel) -> gaio_status;
    pub fn gaio_kernel_release(kernel: *mut gaio_kernel) -> gaio_status;
    pub fn gaio_kernel_name(kernel: *const gaio_kernel) -> *const c_char;
    pub fn gaio_launch(stream: *mut gaio_stream, kernel: *mut gaio_kernel, grid: gaio_dim3, block: gaio_dim3,
                       shared_mem_bytes: usize, args: *const gaio_arg, nargs: usize) -> gaio_status;
    pub fn gaio_library_load_data(image: *const c_void, out: *mut *mut gaio_library) -> gaio_status;
    pub fn gaio_library_load_file(path: *const c_char, out: *mut *mut gaio_library) -> gaio_status;
    pub fn gaio_library_compile(source: *const c_char, program_name: *const c_char, options: *const *const c_char,
                                noptions: usize, log: *mut c_char, log_size: usize, out: *mut *mut gaio_library)
        -> gaio_status;
    pub fn gaio_library_retain(lib: *mut gaio_library) -> gaio_status;
    pub fn gaio_library_release(lib: *mut gaio_library) -> gaio_status;
    pub fn gaio_library_get_kernel(lib: *mut gaio_library, name: *const c_char, out: *mut *mut gaio_kernel)
        -> gaio_status;

    pub fn gaio_image_check(img: *const gaio_image, resolved: *mut gaio_image, bytes: *mut usize) -> gaio_status;
    pub fn gaio_resize(stream: *mut gaio_stream, src: *const gaio_image, dst: *const gaio_image, interp: gaio_interp)
        -> gaio_status;
    pub fn gaio_crop_resize(stream: *mut gaio_stream, src: *const gaio_image, rois: *const gaio_rect,
                            dst: *const gaio_image, interp: gaio_interp) -> gaio_status;
    pub fn gaio_crop_resize_varshape(stream: *mut gaio_stream, srcs: *const gaio_image, count: i32,
                                     rois: *const gaio_rect, dst: *const gaio_image, interp: gaio_interp)
        -> gaio_status;
    pub fn gaio_cvt_color(stream: *mut gaio_stream, src: *const gaio_image, dst: *const gaio_image, code: gaio_color,
                          yuv: gaio_yuv) -> gaio_status;
    pub fn gaio_convert(stream: *mut gaio_stream, src: *const gaio_image, dst: *const gaio_image, scale: f64,
                        offset: f64) -> gaio_status;
    pub fn gaio_normalize(stream: *mut gaio_stream, src: *const gaio_image, dst: *const gaio_image, scale: f32,
                          mean: *const f32, std: *const f32) -> gaio_status;
    pub fn gaio_reformat(stream: *mut gaio_stream, src: *const gaio_image, dst: *const gaio_image) -> gaio_status;
    pub fn gaio_preprocess(stream: *mut gaio_stream, src: *const gaio_image, rois: *const gaio_rect,
                           dst: *const gaio_image, params: *const gaio_preprocess_params) -> gaio_status;
    pub fn gaio_preprocess_varshape(stream: *mut gaio_stream, srcs: *const gaio_image, count: i32,
                                    rois: *const gaio_rect, dst: *const gaio_image,
                                    params: *const gaio_preprocess_params) -> gaio_status;

    pub fn gaio_model_load(path: *const c_char, out: *mut *mut gaio_model) -> gaio_status;
    pub fn gaio_model_load_memory(data: *const c_void, size: usize, out: *mut *mut gaio_model) -> gaio_status;
    pub fn gaio_model_retain(m: *mut gaio_model) -> gaio_status;
    pub fn gaio_model_release(m: *mut gaio_model) -> gaio_status;
    pub fn gaio_model_input(m: *const gaio_model, i: i32, out: *mut gaio_model_io) -> gaio_status;
    pub fn gaio_model_output(m: *const gaio_model, i: i32, out: *mut gaio_model_io) -> gaio_status;

    pub fn gaio_engine_build(m: *mut gaio_model, ctx: *mut gaio_context, options: *const gaio_engine_options,
                             out: *mut *mut gaio_engine) -> gaio_status;
    pub fn gaio_engine_build_async(m: *mut gaio_model, ctx: *mut gaio_context, options: *const gaio_engine_options,
                                   out: *mut *mut gaio_engine, built: *mut *mut gaio_future) -> gaio_status;
    pub fn gaio_engine_retain(e: *mut gaio_engine) -> gaio_status;
    pub fn gaio_engine_release(e: *mut gaio_engine) -> gaio_status;
    pub fn gaio_engine_input(e: *mut gaio_engine, i: i32, out: *mut gaio_model_io) -> gaio_status;
    pub fn gaio_engine_output(e: *mut gaio_engine, i: i32, out: *mut gaio_model_io) -> gaio_status;
    pub fn gaio_engine_save(e: *mut gaio_engine, path: *const c_char) -> gaio_status;
    pub fn gaio_engine_load(path: *const c_char, ctx: *mut gaio_context, out: *mut *mut gaio_engine) -> gaio_status;
    pub fn gaio_engine_create_exec(e: *mut gaio_engine, out: *mut *mut gaio_model_exec) -> gaio_status;
    pub fn gaio_model_exec_release(x: *mut gaio_model_exec) -> gaio_status;
    pub fn gaio_model_exec_input(x: *mut gaio_model_exec, i: i32, out: *mut gaio_model_io) -> gaio_status;
    pub fn gaio_model_exec_output(x: *mut gaio_model_exec, i: i32, out: *mut gaio_model_io) -> gaio_status;
    pub fn gaio_model_run(x: *mut gaio_model_exec, stream: *mut gaio_stream, inputs: *const gaio_tensor,
                          ninputs: i32, outputs: *const gaio_tensor, noutputs: i32, done: *mut *mut gaio_future)
        -> gaio_status;

    pub fn gaio_dlpack_view_make(buf: *mut gaio_buffer, offset: usize, dtype: gaio_dtype, ndim: i32,
                                 shape: *const i64) -> gaio_dlpack_view;
    pub fn gaio_dlpack_export(view: *const gaio_dlpack_view, out: *mut *mut DLManagedTensorVersioned) -> gaio_status;
    pub fn gaio_dlpack_export_legacy(view: *const gaio_dlpack_view, out: *mut *mut DLManagedTensor) -> gaio_status;
    pub fn gaio_dlpack_import(ctx: *mut gaio_context, tensor: *mut DLManagedTensorVersioned,
                              view: *mut gaio_dlpack_view) -> gaio_status;
    pub fn gaio_dlpack_import_legacy(ctx: *mut gaio_context, tensor: *mut DLManagedTensor,
                                     view: *mut gaio_dlpack_view) -> gaio_status;
    pub fn gaio_dlpack_view_from_image(img: *const gaio_image, view: *mut gaio_dlpack_view) -> gaio_status;
    pub fn gaio_dlpack_view_to_image(view: *const gaio_dlpack_view, layout: gaio_layout, img: *mut gaio_image)
        -> gaio_status;

    pub fn gaio_cq_create(out: *mut *mut gaio_cq) -> gaio_status;
    pub fn gaio_cq_retain(cq: *mut gaio_cq) -> gaio_status;
    pub fn gaio_cq_release(cq: *mut gaio_cq) -> gaio_status;
    pub fn gaio_cq_fd(cq: *mut gaio_cq, fd: *mut c_int) -> gaio_status;
    pub fn gaio_cq_add(cq: *mut gaio_cq, fut: *mut gaio_future, user_data: *mut c_void) -> gaio_status;
    pub fn gaio_cq_pop(cq: *mut gaio_cq, entries: *mut gaio_cq_entry, max: usize, count: *mut usize) -> gaio_status;
    pub fn gaio_cq_wait(cq: *mut gaio_cq, entries: *mut gaio_cq_entry, max: usize, count: *mut usize,
                        timeout_ns: i64) -> gaio_status;
}
