//! DLPack: zero-copy exchange of buffers with other libraries (PyTorch, CuPy, JAX,
//! other Rust crates), DLPack 1.x (`DLManagedTensorVersioned`).
//!
//! Export: a buffer becomes a [`DLPackTensor`] that holds its own reference to the
//! memory, so dropping the Rust buffer never frees what the consumer reads; the consumer
//! takes it with `into_raw` and calls its deleter when done. Import: gaio wraps the
//! producer's memory in a buffer and calls the producer's deleter exactly once, when
//! its last use ends (the Rust buffer's drop or the last op in flight, whichever is
//! later). DLPack carries no stream: the two sides order their work themselves (an
//! [`Event`](crate::Event), or a fence awaited) before a tensor changes hands.
use crate::buffer::{DeviceBuffer, Element, HostBuffer, Memory};
use crate::context::Context;
use crate::error::{check, invalid, Error, Result, Status};
use gaio_sys as sys;

/// An owned DLPack 1.x tensor: its deleter runs on drop unless `into_raw` handed it on.
pub struct DLPackTensor {
    raw: *mut sys::DLManagedTensorVersioned,
}

// The tensors gaio exports take their deleter on any thread. One from elsewhere is
// only adopted through `from_raw`, whose contract says the same of its deleter.
unsafe impl Send for DLPackTensor {}

impl DLPackTensor {
    /// Takes ownership of a producer's tensor (its deleter runs once, here or in gaio).
    ///
    /// # Safety
    /// `raw` must be a valid DLManagedTensorVersioned nobody else will delete, whose
    /// memory stays valid until its deleter runs, which no one writes while gaio uses it,
    /// and whose deleter may run on any thread.
    pub unsafe fn from_raw(raw: *mut sys::DLManagedTensorVersioned) -> Result<DLPackTensor> {
        if raw.is_null() {
            return Err(invalid("DLPackTensor::from_raw: the tensor is NULL".to_string()));
        }
        Ok(DLPackTensor { raw })
    }

    /// Hands the tensor on: the receiver calls `(*t).deleter` once when done.
    pub fn into_raw(self) -> *mut sys::DLManagedTensorVersioned {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }

    fn t(&self) -> &sys::DLManagedTensorVersioned {
        unsafe { &*self.raw }
    }

    pub fn version(&self) -> (u32, u32) {
        (self.t().version.major, self.t().version.minor)
    }

    pub fn device(&self) -> sys::DLDevice {
        self.t().dl_tensor.device
    }

    pub fn dtype(&self) -> sys::DLDataType {
        self.t().dl_tensor.dtype
    }

    pub fn is_read_only(&self) -> bool {
        self.t().flags & sys::DLPACK_FLAG_BITMASK_READ_ONLY != 0
    }

    /// The shape (empty for a 0-d tensor).
    pub fn shape(&self) -> &[i64] {
        let t = &self.t().dl_tensor;
        if t.ndim <= 0 || t.shape.is_null() {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }

    /// The strides in elements, None for compact row-major.
    pub fn strides(&self) -> Option<&[i64]> {
        let t = &self.t().dl_tensor;
        if t.strides.is_null() || t.ndim <= 0 {
            return None;
        }
        Some(unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) })
    }

    /// The address of element [0, ...] in the tensor's device's address space.
    pub fn data_ptr(&self) -> *mut std::os::raw::c_void {
        let t = &self.t().dl_tensor;
        (t.data as usize).wrapping_add(t.byte_offset as usize) as *mut std::os::raw::c_void
    }
}

impl Drop for DLPackTensor {
    fn drop(&mut self) {
        if let Some(d) = self.t().deleter {
            unsafe { d(self.raw) };
        }
    }
}

impl std::fmt::Debug for DLPackTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DLPackTensor({:?} {:?} {:?})", self.device(), self.dtype(), self.shape())
    }
}

/// A compact row-major tensor of `shape` over all of `m`.
fn export<T: Element, M: Memory<T>>(what: &str, m: &M, shape: &[i64]) -> Result<DLPackTensor> {
    if T::DTYPE == 0 {
        return Err(invalid(format!("{}: DLPack has no dtype gaio knows for {}", what, std::any::type_name::<T>())));
    }
    if shape.is_empty() || shape.len() > sys::GAIO_DLPACK_MAX_NDIM {
        return Err(invalid(format!("{}: shape has {} dimensions; 1 to {} are allowed", what, shape.len(),
                                   sys::GAIO_DLPACK_MAX_NDIM)));
    }
    let count = shape.iter().try_fold(1i64, |n, &d| if d >= 1 { n.checked_mul(d) } else { None });
    if count != Some(m.len() as i64) {
        return Err(invalid(format!("{}: shape {:?} does not hold the buffer's {} elements exactly", what, shape,
                                   m.len())));
    }
    let view = unsafe { sys::gaio_dlpack_view_make(m.raw(), 0, T::DTYPE, shape.len() as i32, shape.as_ptr()) };
    let mut raw = std::ptr::null_mut();
    check(unsafe { sys::gaio_dlpack_export(&view, &mut raw) })?;
    Ok(DLPackTensor { raw })
}

/// Wraps the tensor in a gaio buffer of ctx holding T, compact row-major and writable;
/// its buffer reference and element count. On failure the tensor is deleted (by gaio
/// when it had taken it, else by the DLPackTensor's drop).
fn import<T: Element>(what: &str, ctx: &Context, tensor: DLPackTensor) -> Result<(*mut sys::gaio_buffer, usize)> {
    if tensor.is_read_only() {
        return Err(Error {
            status: Status::NotSupported,
            message: format!("{}: the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY) and gaio's Rust buffers \
                              are writable", what),
        });
    }
    let mut view = std::mem::MaybeUninit::<sys::gaio_dlpack_view>::zeroed();
    check(unsafe { sys::gaio_dlpack_import(ctx.raw, tensor.raw, view.as_mut_ptr()) })?;
    std::mem::forget(tensor); // gaio owns it now: its buffer's last reference deletes it
    let view = unsafe { view.assume_init() };
    let fail = |msg: String| {
        unsafe { sys::gaio_buffer_release(view.buffer) };
        Err(invalid(format!("{}: {}", what, msg)))
    };
    if view.dtype != T::DTYPE || T::DTYPE == 0 {
        return fail(format!("the tensor's dtype (gaio dtype {}) is not {}", view.dtype, std::any::type_name::<T>()));
    }
    let shape = &view.shape[..view.ndim as usize];
    let mut expect = 1i64;
    for d in (0..shape.len()).rev() {
        if shape[d] > 1 && view.strides[d] != expect {
            return fail(format!("the tensor is not compact row-major (shape {:?}, strides {:?}): copy it first",
                                shape, &view.strides[..shape.len()]));
        }
        expect *= shape[d];
    }
    if view.offset != 0 {
        return fail(format!("the tensor starts {} bytes into its memory", view.offset));
    }
    Ok((view.buffer, expect as usize))
}

impl<T: Element> DeviceBuffer<T> {
    /// This buffer as a DLPack tensor of `shape` (compact row-major, all elements).
    pub fn to_dlpack(&self, shape: &[i64]) -> Result<DLPackTensor> {
        export("DeviceBuffer::to_dlpack", self, shape)
    }

    /// Adopts a DLPack tensor's memory without copying: a compact row-major, writable
    /// tensor of T that ctx's ops can use (kDLCUDA memory of ctx's device, pinned or
    /// managed memory, host memory on the host context); its shape alongside.
    pub fn from_dlpack(ctx: &Context, tensor: DLPackTensor) -> Result<(DeviceBuffer<T>, Vec<i64>)> {
        let shape = tensor.shape().to_vec();
        let (raw, len) = import::<T>("DeviceBuffer::from_dlpack", ctx, tensor)?;
        Ok((DeviceBuffer::adopt(raw, len), shape))
    }
}

impl<T: Element> HostBuffer<T> {
    /// This buffer as a DLPack tensor of `shape` (kDLCUDAHost on a GPU, kDLCPU on the
    /// host device).
    pub fn to_dlpack(&self, shape: &[i64]) -> Result<DLPackTensor> {
        export("HostBuffer::to_dlpack", self, shape)
    }

    /// Adopts a DLPack tensor in memory the host reads (pinned, managed, or host memory
    /// on the host context), as DeviceBuffer::from_dlpack does.
    pub fn from_dlpack(ctx: &Context, tensor: DLPackTensor) -> Result<(HostBuffer<T>, Vec<i64>)> {
        let shape = tensor.shape().to_vec();
        let (raw, len) = import::<T>("HostBuffer::from_dlpack", ctx, tensor)?;
        let mut p = std::ptr::null_mut();
        if unsafe { sys::gaio_buffer_host_ptr(raw, &mut p) } != sys::GAIO_OK {
            let msg = crate::error::cstr(unsafe { sys::gaio_last_error() });
            unsafe { sys::gaio_buffer_release(raw) };
            return Err(invalid(format!("HostBuffer::from_dlpack: the host cannot read the tensor's memory ({})",
                                       msg)));
        }
        Ok((HostBuffer::adopt(raw, len), shape))
    }
}
