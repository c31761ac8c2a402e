//! gaio's futures: one-shot completions. A gaio future is a ticket: the work it covers
//! holds its own references to what it uses, so dropping or leaking (`mem::forget`) a
//! Future never frees memory the device still reads; at worst a leak.
//!
//! A Future is also a `std::future::Future` (Output: `Result<()>`): awaited under Tokio,
//! its task is woken through a completion queue in Tokio's reactor (reactor.rs). It can
//! be awaited or waited on from several places: each clone is its own waiter.
//!
//! An op's Future observes its op's point, whose gaio fence is made only when needed
//! (point.rs): holding the Future is what keeps it exact.
use crate::error::{check, cstr, Result};
use crate::point::Point;
use crate::reactor::{self, Driver, Slot};
use gaio_sys as sys;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

pub struct Future {
    pub(crate) point: Arc<Point>,
    /// Set by the first pending poll: the queue it waits in.
    reg: Mutex<Option<(Arc<Slot>, Arc<Driver>)>>,
}

impl Future {
    /// Takes over one reference to raw.
    pub(crate) fn wrap(raw: *mut sys::gaio_future) -> Future {
        Future::of(Arc::new(Point::made(raw)))
    }

    /// A (caller's) Future of point.
    pub(crate) fn of(point: Arc<Point>) -> Future {
        point.users().fetch_add(1, Ordering::AcqRel);
        Future { point, reg: Mutex::new(None) }
    }

    fn raw(&self) -> Result<*mut sys::gaio_future> {
        self.point.get()
    }

    /// Takes over one reference to a gaio_future made by C code (gaio-sys).
    ///
    /// # Safety
    /// `raw` must be a live gaio_future whose reference the caller gives up.
    pub unsafe fn from_raw(raw: *mut sys::gaio_future) -> Future {
        Future::wrap(raw)
    }

    /// The C handle (its fence made now if it was not yet); valid while self lives.
    pub fn as_raw(&self) -> Result<*mut sys::gaio_future> {
        self.raw()
    }

    /// Blocks until complete: Ok, or the failure of the work it covers.
    pub fn wait(&self) -> Result<()> {
        check(unsafe { sys::gaio_future_wait(self.raw()?, sys::GAIO_INFINITE) })
    }

    /// Blocks up to `timeout`: Ok(true) once complete with success, Ok(false) when the
    /// time ran out (the work goes on), Err with the work's failure.
    pub fn wait_for(&self, timeout: Duration) -> Result<bool> {
        let ns = i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
        match unsafe { sys::gaio_future_wait(self.raw()?, ns) } {
            sys::GAIO_ERR_TIMEOUT => Ok(false),
            st => check(st).map(|_| true),
        }
    }

    /// None while the work runs; Some(result) once complete. Never blocks.
    pub fn poll_done(&self) -> Option<Result<()>> {
        let raw = match self.raw() {
            Ok(r) => r,
            Err(e) => return Some(Err(e)),
        };
        match unsafe { sys::gaio_future_poll(raw) } {
            sys::GAIO_ERR_NOT_READY => None,
            sys::GAIO_OK => Some(Ok(())),
            st => Some(Err(crate::error::Error {
                status: crate::error::Status::from_raw(st),
                message: cstr(unsafe { sys::gaio_future_message(raw) }),
            })),
        }
    }

    /// Completes when all of `futures` have; fails with the first failure in order.
    pub fn join(futures: &[&Future]) -> Result<Future> {
        let raws = futures.iter().map(|f| f.raw()).collect::<Result<Vec<_>>>()?;
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::gaio_future_join(raws.as_ptr(), raws.len(), &mut raw) })?;
        Ok(Future::wrap(raw))
    }
}

impl std::future::Future for Future {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        if let Some(r) = this.poll_done() {
            return Poll::Ready(r);
        }
        let mut reg = this.reg.lock().unwrap_or_else(|p| p.into_inner());
        if reg.as_ref().map_or(true, |(_, d)| !d.alive()) {
            let driver = match reactor::current() {
                Ok(d) => d,
                Err(e) => return Poll::Ready(Err(e)),
            };
            let slot = Arc::new(Slot::default());
            let raw = match this.raw() {
                Ok(r) => r,
                Err(e) => return Poll::Ready(Err(e)),
            };
            if let Err(e) = driver.add(raw, &slot) {
                return Poll::Ready(Err(e));
            }
            *reg = Some((slot, driver));
        }
        let (slot, _) = reg.as_ref().expect("registered above");
        let mut st = slot.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.done {
            drop(st);
            // The queue saw it complete: gaio's own poll now says how.
            return Poll::Ready(this.poll_done().unwrap_or(Ok(())));
        }
        st.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Clone for Future {
    /// Another waiter on the same point.
    fn clone(&self) -> Future {
        Future::of(Arc::clone(&self.point))
    }
}

impl Drop for Future {
    fn drop(&mut self) {
        self.point.users().fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for Future {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gaio::Future({:p})", Arc::as_ptr(&self.point))
    }
}
