//! The model stage, TensorRT's split: a Model (an ONNX graph, host data) -> an Engine
//! built for one context (plan, tuned library plans, weights in final form; saved and
//! loaded as a file) -> execution contexts (Exec), cheap, many per engine, whose `run`
//! enqueues one inference and returns a Future.
use crate::buffer::{DeviceBuffer, Element, LastUse, Memory};
use crate::context::Context;
use crate::error::{check, cstr, invalid, Result};
use crate::future::Future;
use crate::stream::Stream;
use gaio_sys as sys;
use std::ffi::CString;
use std::path::Path;
use std::ptr;

/// An element type of gaio's tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    U8,
    U16,
    S16,
    F16,
    F32,
    S32,
    S64,
}

impl Dtype {
    fn from_raw(d: sys::gaio_dtype) -> Option<Dtype> {
        Some(match d {
            sys::GAIO_DTYPE_U8 => Dtype::U8,
            sys::GAIO_DTYPE_U16 => Dtype::U16,
            sys::GAIO_DTYPE_S16 => Dtype::S16,
            sys::GAIO_DTYPE_F16 => Dtype::F16,
            sys::GAIO_DTYPE_F32 => Dtype::F32,
            sys::GAIO_DTYPE_S32 => Dtype::S32,
            sys::GAIO_DTYPE_S64 => Dtype::S64,
            _ => return None,
        })
    }
}

/// A graph input or output: its name, dtype and shape (-1: a symbolic dimension).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Io {
    pub name: String,
    pub dtype: Option<Dtype>,
    pub shape: Vec<i64>,
}

fn io_of(io: &sys::gaio_model_io) -> Io {
    Io {
        name: cstr(io.name),
        dtype: Dtype::from_raw(io.dtype),
        shape: io.shape[..io.ndim.clamp(0, sys::GAIO_MODEL_MAX_NDIM as i32) as usize].to_vec(),
    }
}

/// All of a graph's inputs or outputs through `get(i)`, until it answers NOT_FOUND or
/// INVALID_ARG past the last.
fn ios(mut get: impl FnMut(i32, *mut sys::gaio_model_io) -> sys::gaio_status) -> Vec<Io> {
    let mut v = Vec::new();
    for i in 0.. {
        let mut io = std::mem::MaybeUninit::<sys::gaio_model_io>::zeroed();
        if get(i, io.as_mut_ptr()) != sys::GAIO_OK {
            break;
        }
        v.push(io_of(unsafe { &io.assume_init() }));
    }
    v
}

fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.to_string_lossy().as_bytes()).map_err(|_| invalid(format!("{}: a NUL in the path", path.display())))
}

/// An ONNX model: host data, shared by any number of engines.
pub struct Model {
    pub(crate) raw: *mut sys::gaio_model,
}

impl Model {
    /// Parses and checks an ONNX file (its external data beside it).
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let p = c_path(path.as_ref())?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_model_load(p.as_ptr(), &mut raw) })?;
        Ok(Model { raw })
    }

    /// From the bytes of an ONNX file (external data refused).
    pub fn from_bytes(data: &[u8]) -> Result<Model> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_model_load_memory(data.as_ptr() as *const _, data.len(), &mut raw) })?;
        Ok(Model { raw })
    }

    pub fn inputs(&self) -> Vec<Io> {
        ios(|i, out| unsafe { sys::gaio_model_input(self.raw, i, out) })
    }

    pub fn outputs(&self) -> Vec<Io> {
        ios(|i, out| unsafe { sys::gaio_model_output(self.raw, i, out) })
    }
}

/// Weights and intermediates: f16 on a GPU and the model's own on the host (Auto).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precision {
    #[default]
    Auto,
    Model,
    F16,
    /// f16 with f16-accumulating convolutions allowed: faster, less precise.
    F16Fast,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Layout {
    #[default]
    Auto,
    Nchw,
    Nhwc,
}

/// How to build an engine; the default builds for batch 1 (a symbolic batch), AUTO
/// precision and layout, tuned, with CUDA graphs.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// The symbolic dimensions' value (a model's batch), 1 by default.
    pub batch: i64,
    pub precision: Precision,
    pub layout: Layout,
    /// cuDNN's first plan per convolution, untimed: a faster build.
    pub no_tune: bool,
    pub no_cuda_graph: bool,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions { batch: 1, precision: Precision::default(), layout: Layout::default(), no_tune: false,
                        no_cuda_graph: false }
    }
}

impl EngineOptions {
    fn raw(&self) -> sys::gaio_engine_options {
        sys::gaio_engine_options {
            batch: self.batch,
            precision: match self.precision {
                Precision::Auto => sys::GAIO_MODEL_PRECISION_AUTO,
                Precision::Model => sys::GAIO_MODEL_PRECISION_MODEL,
                Precision::F16 => sys::GAIO_MODEL_PRECISION_F16,
                Precision::F16Fast => sys::GAIO_MODEL_PRECISION_F16_FAST,
            },
            layout: match self.layout {
                Layout::Auto => sys::GAIO_MODEL_LAYOUT_AUTO,
                Layout::Nchw => sys::GAIO_MODEL_LAYOUT_NCHW,
                Layout::Nhwc => sys::GAIO_MODEL_LAYOUT_NHWC,
            },
            shapes: ptr::null(),
            nshapes: 0,
            flags: (if self.no_tune { sys::GAIO_ENGINE_NO_TUNE } else { 0 })
                | (if self.no_cuda_graph { sys::GAIO_ENGINE_NO_CUDA_GRAPH } else { 0 }),
        }
    }
}

/// A model built for one context.
pub struct Engine {
    pub(crate) raw: *mut sys::gaio_engine,
}

impl Engine {
    /// Builds and blocks until done (seconds on a GPU).
    pub fn build(model: &Model, ctx: &Context, options: &EngineOptions) -> Result<Engine> {
        let o = options.raw();
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_engine_build(model.raw, ctx.raw, &o, &mut raw) })?;
        Ok(Engine { raw })
    }

    /// Builds off the caller's thread: the engine at once (its calls wait for the
    /// build) and a future that completes with the build's outcome.
    pub fn build_async(model: &Model, ctx: &Context, options: &EngineOptions) -> Result<(Engine, Future)> {
        let o = options.raw();
        let (mut raw, mut built) = (ptr::null_mut(), ptr::null_mut());
        check(unsafe { sys::gaio_engine_build_async(model.raw, ctx.raw, &o, &mut raw, &mut built) })?;
        Ok((Engine { raw }, Future::wrap(built)))
    }

    /// An engine file of `save`, for this context's device and library versions.
    pub fn load(path: impl AsRef<Path>, ctx: &Context) -> Result<Engine> {
        let p = c_path(path.as_ref())?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_engine_load(p.as_ptr(), ctx.raw, &mut raw) })?;
        Ok(Engine { raw })
    }

    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let p = c_path(path.as_ref())?;
        check(unsafe { sys::gaio_engine_save(self.raw, p.as_ptr()) })
    }

    /// The inputs with the shapes the engine was built for.
    pub fn inputs(&self) -> Vec<Io> {
        ios(|i, out| unsafe { sys::gaio_engine_input(self.raw, i, out) })
    }

    pub fn outputs(&self) -> Vec<Io> {
        ios(|i, out| unsafe { sys::gaio_engine_output(self.raw, i, out) })
    }

    /// An execution context: an activation arena (and a CUDA graph) of its own.
    pub fn create_exec(&self) -> Result<Exec> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_engine_create_exec(self.raw, &mut raw) })?;
        Ok(Exec { raw })
    }
}

/// One execution context. Its runs are ordered; for runs in parallel make one per
/// stream. Dropping it waits for its last run where it replays a CUDA graph.
pub struct Exec {
    raw: *mut sys::gaio_model_exec,
}

// Runs of one context are serialised by gaio (a lock), from any thread.
unsafe impl Send for Exec {}
unsafe impl Sync for Exec {}

/// A tensor over a device buffer: its elements in the shape's order (packed, row major).
pub struct Tensor<'a> {
    raw: sys::gaio_tensor,
    last_use: &'a LastUse,
}

// The descriptor names a buffer (thread-safe) and borrows its use record (Sync).
unsafe impl Send for Tensor<'_> {}
unsafe impl Sync for Tensor<'_> {}

impl<'a> Tensor<'a> {
    /// `buf` seen as a tensor of `shape` (its element count must match).
    pub fn new<T: Element>(buf: &'a DeviceBuffer<T>, shape: &[i64]) -> Result<Tensor<'a>> {
        if T::DTYPE == 0 {
            return Err(invalid(format!("Tensor::new: gaio has no dtype for {}", std::any::type_name::<T>())));
        }
        if shape.is_empty() || shape.len() > sys::GAIO_TENSOR_MAX_NDIM {
            return Err(invalid(format!("Tensor::new: {} dimensions, not 1..{}", shape.len(), sys::GAIO_TENSOR_MAX_NDIM)));
        }
        let count = shape.iter().try_fold(1i64, |n, &d| if d >= 1 { n.checked_mul(d) } else { None });
        if count != Some(buf.len() as i64) {
            return Err(invalid(format!("Tensor::new: shape {:?} does not hold the buffer's {} elements", shape,
                                       buf.len())));
        }
        let mut raw = sys::gaio_tensor {
            buffer: buf.raw(),
            offset: 0,
            dtype: T::DTYPE,
            ndim: shape.len() as i32,
            shape: [0; sys::GAIO_TENSOR_MAX_NDIM],
            strides: [0; sys::GAIO_TENSOR_MAX_NDIM],
            layout: sys::GAIO_TENSOR_ROW_MAJOR,
        };
        raw.shape[..shape.len()].copy_from_slice(shape);
        Ok(Tensor { raw, last_use: buf.last_use() })
    }
}

impl Exec {
    /// Enqueues one inference on `stream` (of the engine's context): inputs[i] feeds
    /// graph input i, outputs[i] receives output i, each of the engine's dtype and
    /// shape. Everything is checked before anything is enqueued. The buffers remember
    /// the run: host access to them waits for it.
    pub fn run(&self, stream: &Stream, inputs: &[Tensor<'_>], outputs: &mut [Tensor<'_>]) -> Result<Future> {
        let ins: Vec<sys::gaio_tensor> = inputs.iter().map(|t| t.raw).collect();
        let outs: Vec<sys::gaio_tensor> = outputs.iter().map(|t| t.raw).collect();
        let mut done = ptr::null_mut();
        let sub = stream.submit()?;
        check(unsafe {
            sys::gaio_model_run(self.raw, stream.raw, ins.as_ptr(), ins.len() as i32, outs.as_ptr(), outs.len() as i32,
                                &mut done)
        })?;
        sub.made(done);
        let done = Future::wrap(done);
        for t in inputs.iter().chain(outputs.iter()) {
            t.last_use.set(&done.point);
        }
        Ok(done)
    }

    pub fn inputs(&self) -> Vec<Io> {
        ios(|i, out| unsafe { sys::gaio_model_exec_input(self.raw, i, out) })
    }

    pub fn outputs(&self) -> Vec<Io> {
        ios(|i, out| unsafe { sys::gaio_model_exec_output(self.raw, i, out) })
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        unsafe { sys::gaio_model_exec_release(self.raw) };
    }
}

crate::handle::handle!(Model, gaio_model, gaio_model_retain, gaio_model_release);
crate::handle::handle!(Engine, gaio_engine, gaio_engine_retain, gaio_engine_release);
