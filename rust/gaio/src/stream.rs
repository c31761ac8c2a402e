//! Streams: ordered queues of device work.
use crate::buffer::Memory;
use crate::context::Context;
use crate::error::{check, invalid, Result};
use crate::future::Future;
use gaio_sys as sys;
use std::ptr;

pub struct Stream {
    pub(crate) raw: *mut sys::gaio_stream,
}

impl Stream {
    /// A stream of ctx: priority 0 (normal) .. the device's max_priority (most urgent).
    pub fn new(ctx: &Context, priority: i32) -> Result<Stream> {
        Stream::create(ctx, priority, 0)
    }

    /// A DEFERRED stream: calls only validate and queue; gaio's runtime thread submits.
    pub fn deferred(ctx: &Context, priority: i32) -> Result<Stream> {
        Stream::create(ctx, priority, sys::GAIO_STREAM_DEFERRED)
    }

    fn create(ctx: &Context, priority: i32, flags: u32) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_stream_create(ctx.raw, priority, flags, &mut raw) })?;
        Ok(Stream { raw })
    }

    /// Wraps a foreign native stream (a `CUstream` of PyTorch, CuPy or your own code),
    /// which gaio uses but never destroys.
    ///
    /// # Safety
    /// `native` must be a valid stream of ctx's device and outlive the returned Stream
    /// and all work gaio enqueues on it.
    pub unsafe fn from_raw(ctx: &Context, native: *mut std::os::raw::c_void) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        check(sys::gaio_stream_wrap(ctx.raw, native, 0, &mut raw))?;
        Ok(Stream { raw })
    }

    pub fn priority(&self) -> Result<i32> {
        let mut p = 0;
        check(unsafe { sys::gaio_stream_priority(self.raw, &mut p) })?;
        Ok(p)
    }

    pub fn is_deferred(&self) -> Result<bool> {
        let mut f = 0;
        check(unsafe { sys::gaio_stream_flags(self.raw, &mut f) })?;
        Ok(f & sys::GAIO_STREAM_DEFERRED != 0)
    }

    /// A future that completes when every op submitted so far has run.
    pub fn fence(&self) -> Result<Future> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_future_fence(self.raw, &mut raw) })?;
        Ok(Future::wrap(raw))
    }

    /// Blocks until the stream has drained; the first failure of its work, if any.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::gaio_stream_synchronize(self.raw) })
    }

    /// Copies all of src into dst (same element type and length), in stream order.
    /// Both remember the copy: host access to either waits for it.
    pub fn copy<T: Copy, D: Memory<T> + ?Sized, S: Memory<T> + ?Sized>(&self, dst: &mut D, src: &S)
                                                                        -> Result<Future> {
        if dst.len() != src.len() {
            return Err(invalid(format!("Stream::copy: dst holds {} elements, src {}", dst.len(), src.len())));
        }
        let bytes = src.len() * std::mem::size_of::<T>();
        if bytes > 0 {
            // (gaio refuses an empty copy; an empty one is only its point in the stream)
            check(unsafe { sys::gaio_memcpy_async(self.raw, dst.raw(), 0, src.raw(), 0, bytes) })?;
        }
        let done = self.fence()?;
        dst.used_until(&done);
        src.used_until(&done);
        Ok(done)
    }

    /// Sets every byte of dst to `value`, in stream order.
    pub fn fill_bytes<T: Copy, D: Memory<T> + ?Sized>(&self, dst: &mut D, value: u8) -> Result<Future> {
        let bytes = dst.len() * std::mem::size_of::<T>();
        if bytes > 0 {
            check(unsafe { sys::gaio_memset_async(self.raw, dst.raw(), 0, value as i32, bytes) })?;
        }
        let done = self.fence()?;
        dst.used_until(&done);
        Ok(done)
    }
}

crate::handle::handle!(Stream, gaio_stream, gaio_stream_retain, gaio_stream_release);
