//! Devices and contexts.
use crate::error::{check, cstr, Result};
use gaio_sys as sys;
use std::ptr;

/// What a device is: gaio numbers every device; 0 is always the host.
#[derive(Clone, Debug)]
pub struct DeviceProps {
    pub index: i32,
    pub is_gpu: bool,
    pub name: String,
    pub total_memory: u64,
    pub compute_capability: (i32, i32),
    pub processor_count: i32,
    pub max_priority: i32,
}

/// The devices gaio sees (the host first).
pub fn devices() -> Result<Vec<DeviceProps>> {
    let mut n = 0;
    check(unsafe { sys::gaio_device_count(&mut n) })?;
    (0..n).map(device_props).collect()
}

pub fn device_props(index: i32) -> Result<DeviceProps> {
    let mut p = std::mem::MaybeUninit::<sys::gaio_device_props>::zeroed();
    check(unsafe { sys::gaio_device_get_props(index, p.as_mut_ptr()) })?;
    let p = unsafe { p.assume_init() };
    Ok(DeviceProps {
        index,
        is_gpu: p.kind == sys::GAIO_DEVICE_CUDA,
        name: cstr(p.name.as_ptr()),
        total_memory: p.total_memory,
        compute_capability: (p.compute_major, p.compute_minor),
        processor_count: p.processor_count,
        max_priority: p.max_priority,
    })
}

/// What a context is made with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContextOptions {
    /// Bytes of freed memory each pool keeps for reuse before it gives memory back
    /// (0: gaio's default, 64 MiB). Services that allocate per request raise it.
    pub pool_release_threshold: usize,
    /// The initial seed of the context's random-number generator.
    pub rng_seed: u64,
}

/// A device's context (Caffe2's CPUContext / CUDAContext): pools, streams and
/// buffers belong to one. Cloning adds a reference; gaio frees it when the last
/// reference goes and no work in flight uses it.
pub struct Context {
    pub(crate) raw: *mut sys::gaio_context,
}

impl Context {
    /// The context of device `index` (0: the host; see devices()).
    pub fn new(index: i32) -> Result<Context> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_context_create(index, ptr::null(), &mut raw) })?;
        Ok(Context { raw })
    }

    /// The context of device `index` with options (`ContextOptions::default()` is what
    /// `new` uses).
    pub fn with_options(index: i32, options: &ContextOptions) -> Result<Context> {
        let o = sys::gaio_context_options {
            pool_release_threshold: options.pool_release_threshold,
            rng_seed: options.rng_seed,
        };
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_context_create(index, &o, &mut raw) })?;
        Ok(Context { raw })
    }

    /// The first GPU's context, else the host's.
    pub fn best() -> Result<Context> {
        let gpu = devices()?.into_iter().find(|d| d.is_gpu).map(|d| d.index).unwrap_or(0);
        Context::new(gpu)
    }

    pub fn device(&self) -> Result<i32> {
        let mut d = 0;
        check(unsafe { sys::gaio_context_device(self.raw, &mut d) })?;
        Ok(d)
    }

    pub fn is_gpu(&self) -> Result<bool> {
        Ok(device_props(self.device()?)?.is_gpu)
    }

    /// Blocks until every stream of the context has drained.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::gaio_context_synchronize(self.raw) })
    }
}

crate::handle::handle!(Context, gaio_context, gaio_context_retain, gaio_context_release);
