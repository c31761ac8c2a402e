//! gaio futures under Tokio: a completion queue whose fd sits in Tokio's reactor.
//!
//! Each thread that awaits gaio futures gets one queue (`gaio_cq`) and one task of its
//! runtime that waits on the queue's fd through `AsyncFd`, pops what completed and
//! wakes those futures' tasks: never a thread, a queue or a blocking call per future.
//! (Tokio 1.24 gives no identity to a runtime, so the queue is per thread of a runtime,
//! not per runtime: a multi-thread runtime of 8 workers has at most 8.)
//!
//! A future registers on its first pending poll: it adds its gaio future to the queue
//! with an `Arc<Slot>` as the entry's user data, which the queue's task takes back when
//! the entry arrives. Dropping or leaking the Rust future leaves that to happen alone:
//! the gaio future, held by the queue until it completes, and the slot are freed then.
//! A queue whose runtime has shut down takes no more futures; one registered there is
//! registered again on the queue of the thread that polls it next.
use crate::error::{check, Error, Result, Status};
use gaio_sys as sys;
use std::cell::RefCell;
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

#[derive(Default)]
pub(crate) struct SlotState {
    pub(crate) done: bool,
    pub(crate) waker: Option<Waker>,
}

/// What a registered future and the queue's task share.
#[derive(Default)]
pub(crate) struct Slot {
    pub(crate) state: Mutex<SlotState>,
}

pub(crate) struct Driver {
    cq: *mut sys::gaio_cq,
    alive: AtomicBool,
}

// gaio's queues are thread-safe.
unsafe impl Send for Driver {}
unsafe impl Sync for Driver {}

impl Driver {
    pub(crate) fn alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Adds fut; the queue posts slot back when it completes (at once if it has).
    pub(crate) fn add(&self, fut: *mut sys::gaio_future, slot: &Arc<Slot>) -> Result<()> {
        let user = Arc::into_raw(Arc::clone(slot)) as *mut std::os::raw::c_void;
        let r = check(unsafe { sys::gaio_cq_add(self.cq, fut, user) });
        if r.is_err() {
            drop(unsafe { Arc::from_raw(user as *const Slot) });
        }
        r
    }

    /// Pops every waiting entry and wakes its future's task.
    fn drain(&self) {
        let mut entries = [sys::gaio_cq_entry { user_data: std::ptr::null_mut(), status: 0 }; 64];
        loop {
            let mut n = 0usize;
            if unsafe { sys::gaio_cq_pop(self.cq, entries.as_mut_ptr(), entries.len(), &mut n) } != sys::GAIO_OK {
                return;
            }
            for e in &entries[..n] {
                let slot = unsafe { Arc::from_raw(e.user_data as *const Slot) };
                let waker = {
                    let mut st = slot.state.lock().unwrap_or_else(|p| p.into_inner());
                    st.done = true;
                    st.waker.take()
                };
                if let Some(w) = waker {
                    w.wake();
                }
            }
            if n < entries.len() {
                return;
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        unsafe { sys::gaio_cq_release(self.cq) };
    }
}

/// The queue's fd for AsyncFd; the queue owns and closes it.
struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

thread_local! {
    static CURRENT: RefCell<Weak<Driver>> = RefCell::new(Weak::new());
}

/// This thread's queue, made (and its task spawned) on first use.
pub(crate) fn current() -> Result<Arc<Driver>> {
    CURRENT.with(|c| {
        if let Some(d) = c.borrow().upgrade() {
            if d.alive() {
                return Ok(d);
            }
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|_| Error {
            status: Status::State,
            message: "a gaio::Future was awaited outside a Tokio runtime (block on it with wait() instead)"
                .to_string(),
        })?;
        let mut cq = std::ptr::null_mut();
        check(unsafe { sys::gaio_cq_create(&mut cq) })?;
        let d = Arc::new(Driver { cq, alive: AtomicBool::new(true) });
        let mut fd = -1;
        check(unsafe { sys::gaio_cq_fd(cq, &mut fd) })?;
        let afd = AsyncFd::with_interest(Fd(fd), Interest::READABLE).map_err(|e| Error {
            status: Status::System,
            message: format!("registering the completion queue's fd with Tokio (a runtime without enable_io?): {}", e),
        })?;
        handle.spawn(drive(Arc::clone(&d), afd));
        *c.borrow_mut() = Arc::downgrade(&d);
        Ok(d)
    })
}

/// The queue's task: until its runtime shuts down (which drops it mid-await).
async fn drive(d: Arc<Driver>, afd: AsyncFd<Fd>) {
    struct Dead(Arc<Driver>);
    impl Drop for Dead {
        fn drop(&mut self) {
            self.0.alive.store(false, Ordering::Release);
        }
    }
    let _dead = Dead(Arc::clone(&d));
    loop {
        let mut ready = match afd.readable().await {
            Ok(r) => r,
            Err(_) => return,
        };
        d.drain();
        // Entries posted after the drain make the fd readable again with a new tick,
        // which this clear (of the tick it saw) leaves standing.
        ready.clear_ready();
    }
}
