//! Streams: ordered queues of device work.
//!
//! Every op reaches gaio through `Stream::submit`, which keeps the Futures the caller
//! holds exact while making a gaio fence only for those (point.rs): before an op goes
//! in, the previous op's point gets its fence if a Future of it is held. Clones of a
//! Stream share that state; ops submitted to the same gaio stream some other way (a
//! second wrap of one native stream, C code) may delay a held Future's completion to
//! theirs, never bring it forward.
use crate::buffer::Memory;
use crate::context::Context;
use crate::error::{check, invalid, Result};
use crate::future::Future;
use crate::point::Point;
use gaio_sys as sys;
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};

pub struct Stream {
    pub(crate) raw: *mut sys::gaio_stream,
    /// The point after the last op submitted here whose fence is not made yet.
    pending: Arc<Mutex<Option<Arc<Point>>>>,
}

/// Submission in progress on a stream: its pending point, locked (ops on one stream are
/// ordered anyway, so they go in one at a time).
pub(crate) struct Submit<'a> {
    stream: &'a Stream,
    pending: MutexGuard<'a, Option<Arc<Point>>>,
}

impl<'a> Submit<'a> {
    /// After the op went in: the point after it, for its Future and its buffers.
    pub(crate) fn op_done(mut self) -> Arc<Point> {
        let p = Arc::new(Point::after(self.stream.raw));
        *self.pending = Some(Arc::clone(&p));
        p
    }

    /// After a call that returned gaio's own future of its point (a fence, a model run):
    /// the unmade previous point takes it (it completes after that op) and none is pending.
    pub(crate) fn made(mut self, fut: *mut sys::gaio_future) {
        if let Some(p) = self.pending.take() {
            p.resolve(fut);
        }
    }
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
        Ok(Stream::wrap(raw))
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
        Ok(Stream::wrap(raw))
    }

    /// The native stream (a `CUstream` on CUDA, for cuBLAS or your own kernels; null on
    /// the host). Work enqueued there directly is outside gaio's order: wait for a
    /// fence first.
    pub fn native(&self) -> Result<*mut std::os::raw::c_void> {
        let mut n = ptr::null_mut();
        check(unsafe { sys::gaio_stream_native(self.raw, &mut n) })?;
        Ok(n)
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

    /// Takes over one reference to raw.
    fn wrap(raw: *mut sys::gaio_stream) -> Stream {
        Stream { raw, pending: Arc::new(Mutex::new(None)) }
    }

    /// The C handle, for calling libgaio (gaio-sys) directly; valid while self lives.
    /// (Ops submitted through it may delay the completion of Futures held from this
    /// Stream's ops, see above.)
    pub fn as_raw(&self) -> *mut sys::gaio_stream {
        self.raw
    }

    /// Starts submitting an op: makes the fence of the previous op's point where a Future
    /// of it is held, so that it lands right behind that op.
    pub(crate) fn submit(&self) -> Result<Submit<'_>> {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = pending.as_ref() {
            if p.is_held() {
                p.get()?;
            }
        }
        Ok(Submit { stream: self, pending })
    }

    /// Submits `op` (a gaio call on this stream); on success the Future of its point,
    /// which `uses` (the buffers it touches) record as their last use here.
    pub(crate) fn op(&self, uses: &[&crate::buffer::LastUse], op: impl FnOnce() -> sys::gaio_status)
                     -> Result<Future> {
        let sub = self.submit()?;
        check(op())?;
        let p = sub.op_done();
        for u in uses {
            u.set(&p);
        }
        Ok(Future::of(p))
    }

    /// A future that completes when every op submitted so far has run.
    pub fn fence(&self) -> Result<Future> {
        let sub = self.submit()?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_future_fence(self.raw, &mut raw) })?;
        sub.made(raw);
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
        if bytes == 0 {
            // (gaio refuses an empty copy; an empty one is only its point in the stream)
            return self.fence();
        }
        let done = self.op(&[], || unsafe { sys::gaio_memcpy_async(self.raw, dst.raw(), 0, src.raw(), 0, bytes) })?;
        dst.used_until(&done);
        src.used_until(&done);
        Ok(done)
    }

    /// Sets every byte of dst to `value`, in stream order.
    pub fn fill_bytes<T: Copy, D: Memory<T> + ?Sized>(&self, dst: &mut D, value: u8) -> Result<Future> {
        let bytes = dst.len() * std::mem::size_of::<T>();
        if bytes == 0 {
            return self.fence();
        }
        let done = self.op(&[], || unsafe { sys::gaio_memset_async(self.raw, dst.raw(), 0, value as i32, bytes) })?;
        dst.used_until(&done);
        Ok(done)
    }
}

// gaio's streams take calls from any thread; the pending point sits behind its mutex.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Clone for Stream {
    /// The same stream (clones share its pending point).
    fn clone(&self) -> Stream {
        unsafe { sys::gaio_stream_retain(self.raw) };
        Stream { raw: self.raw, pending: Arc::clone(&self.pending) }
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gaio::Stream({:p})", self.raw)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        unsafe { sys::gaio_stream_release(self.raw) };
    }
}
