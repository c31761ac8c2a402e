//! gaio's futures: one-shot completions. A gaio future is a ticket: the work it covers
//! holds its own references to what it uses, so dropping or leaking (`mem::forget`) a
//! Future never frees memory the device still reads; at worst a leak.
use crate::error::{check, cstr, Result};
use gaio_sys as sys;
use std::time::Duration;

pub struct Future {
    pub(crate) raw: *mut sys::gaio_future,
}

// gaio's futures are thread-safe: any thread may wait, poll or add callbacks.
unsafe impl Send for Future {}
unsafe impl Sync for Future {}

impl Future {
    /// Blocks until complete: Ok, or the failure of the work it covers.
    pub fn wait(&self) -> Result<()> {
        check(unsafe { sys::gaio_future_wait(self.raw, sys::GAIO_INFINITE) })
    }

    /// Blocks up to `timeout`: Ok(true) once complete with success, Ok(false) when the
    /// time ran out (the work goes on), Err with the work's failure.
    pub fn wait_for(&self, timeout: Duration) -> Result<bool> {
        let ns = i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
        match unsafe { sys::gaio_future_wait(self.raw, ns) } {
            sys::GAIO_ERR_TIMEOUT => Ok(false),
            st => check(st).map(|_| true),
        }
    }

    /// None while the work runs; Some(result) once complete. Never blocks.
    pub fn poll_done(&self) -> Option<Result<()>> {
        match unsafe { sys::gaio_future_poll(self.raw) } {
            sys::GAIO_ERR_NOT_READY => None,
            sys::GAIO_OK => Some(Ok(())),
            st => Some(Err(crate::error::Error {
                status: crate::error::Status::from_raw(st),
                message: cstr(unsafe { sys::gaio_future_message(self.raw) }),
            })),
        }
    }

    /// Completes when all of `futures` have; fails with the first failure in order.
    pub fn join(futures: &[&Future]) -> Result<Future> {
        let raws: Vec<*mut sys::gaio_future> = futures.iter().map(|f| f.raw).collect();
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::gaio_future_join(raws.as_ptr(), raws.len(), &mut raw) })?;
        Ok(Future { raw })
    }
}

crate::handle::handle!(Future, gaio_future_retain, gaio_future_release);
