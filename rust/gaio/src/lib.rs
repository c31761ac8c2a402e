//! gaio: the GPU as an asynchronous I/O device, from Rust.
//!
//! Contexts, streams, events, typed buffers, futures, kernels and libraries, image ops,
//! DLPack and the model stage (Model -> Engine -> Exec) over libgaio (the `gaio-sys`
//! crate).
//! gaio's model makes the binding safe where a future that borrows its data cannot be:
//! work in flight holds references to everything it uses, so a [`Future`] is only a
//! ticket. Dropping one early, or leaking it with `mem::forget` (or a stream with work
//! in flight, or a buffer an op still reads), leaks at worst and never lets memory be
//! freed while the device uses it.
//!
//! A [`Future`] is a `std::future::Future`: under Tokio its task is woken through a gaio
//! completion queue in Tokio's reactor; `wait()` blocks on it anywhere.
//!
//! Every handle is `Send + Sync`: gaio's objects take calls from any thread. Host
//! access to a [`HostBuffer`] takes `&mut` and waits for the ops that used it.
//! Errors are [`Error`]: gaio's status and its message naming the call.
mod buffer;
mod context;
mod dlpack;
mod error;
mod event;
mod future;
mod handle;
mod image;
mod kernel;
mod model;
mod point;
mod reactor;
mod stream;

pub use buffer::{DeviceBuffer, Element, HostBuffer, Memory};
pub use context::{device_props, devices, Context, ContextOptions, DeviceProps};
pub use dlpack::DLPackTensor;
pub use error::{Error, Result, Status};
pub use event::Event;
pub use future::Future;
pub use kernel::{host_arg, Arg, Dim3, HostKernelFn, Kernel, LaunchInfo, Library};
pub use image::{Color, Image, ImageLayout, Interp, PreprocessParams, Rect};
pub use model::{Dtype, Engine, EngineOptions, Exec, Io, Layout, Model, Precision, Tensor};
pub use stream::Stream;

/// The C API (the DLPack structs among it), for what the safe types do not cover.
pub use gaio_sys as sys;

/// The loaded libgaio's version (major * 10000 + minor * 100 + patch).
pub fn version() -> i32 {
    unsafe { gaio_sys::gaio_version() }
}
