//! Points: where a Future completes. An op's point is made lazily: the gaio fence that
//! observes it is submitted only when someone needs it, so the common `copy; normalize;
//! copy; fence().await` costs one fence, not four.
//!
//! Precision: a Future the caller holds observes exactly its op. Every op submitted
//! through a Stream first makes the fence of the stream's previous op's point if a
//! Future of it is still held (Stream::begin), so that fence lands right behind its op.
//! A point nobody holds a Future of (the buffers' records of their uses) may be made
//! later, at the stream's end by then: it completes at or after its op, which is all
//! host access needs.
use crate::error::{check, Result};
use gaio_sys as sys;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub(crate) struct Point {
    /// The stream whose op this follows (retained), null for a future made by gaio.
    stream: *mut sys::gaio_stream,
    /// The gaio future observing it, null until made.
    fence: Mutex<*mut sys::gaio_future>,
    /// How many Futures (the caller's handles) refer to it.
    users: AtomicUsize,
}

// gaio's streams and futures take calls from any thread.
unsafe impl Send for Point {}
unsafe impl Sync for Point {}

impl Point {
    /// The point after the op just submitted to `stream` (no fence yet).
    pub(crate) fn after(stream: *mut sys::gaio_stream) -> Point {
        unsafe { sys::gaio_stream_retain(stream) };
        Point { stream, fence: Mutex::new(std::ptr::null_mut()), users: AtomicUsize::new(0) }
    }

    /// A point gaio already observes; takes over one reference to fut.
    pub(crate) fn made(fut: *mut sys::gaio_future) -> Point {
        Point { stream: std::ptr::null_mut(), fence: Mutex::new(fut), users: AtomicUsize::new(0) }
    }

    pub(crate) fn stream(&self) -> *mut sys::gaio_stream {
        self.stream
    }

    pub(crate) fn users(&self) -> &AtomicUsize {
        &self.users
    }

    pub(crate) fn is_held(&self) -> bool {
        self.users.load(Ordering::Acquire) > 0
    }

    /// The gaio future, made now (a fence at the stream's end) if it was not yet.
    pub(crate) fn get(&self) -> Result<*mut sys::gaio_future> {
        let mut f = self.fence.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_null() {
            check(unsafe { sys::gaio_future_fence(self.stream, &mut *f) })?;
        }
        Ok(*f)
    }

    /// Gives an unmade point `fut` (retained), a future submitted right behind it or
    /// later in its stream.
    pub(crate) fn resolve(&self, fut: *mut sys::gaio_future) {
        let mut f = self.fence.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_null() {
            unsafe { sys::gaio_future_retain(fut) };
            *f = fut;
        }
    }

    /// Some(done) when made and complete (done: it succeeded); None otherwise, never
    /// making it.
    pub(crate) fn peek_done(&self) -> Option<bool> {
        let f = *self.fence.lock().unwrap_or_else(|e| e.into_inner());
        if f.is_null() {
            return None;
        }
        match unsafe { sys::gaio_future_poll(f) } {
            sys::GAIO_ERR_NOT_READY => None,
            st => Some(st == sys::GAIO_OK),
        }
    }
}

impl Drop for Point {
    fn drop(&mut self) {
        let f = *self.fence.get_mut().unwrap_or_else(|e| e.into_inner());
        unsafe {
            if !f.is_null() {
                sys::gaio_future_release(f);
            }
            if !self.stream.is_null() {
                sys::gaio_stream_release(self.stream);
            }
        }
    }
}
