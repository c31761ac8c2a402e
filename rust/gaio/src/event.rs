//! Events: points in a stream that other streams wait on without the host, and
//! timing between two points.
use crate::context::Context;
use crate::error::{check, Result};
use crate::future::Future;
use crate::stream::Stream;
use gaio_sys as sys;
use std::ptr;

pub struct Event {
    pub(crate) raw: *mut sys::gaio_event,
}

impl Event {
    /// An event of ctx; `timing`: it records timestamps (elapsed_ms), which costs a
    /// little on CUDA.
    pub fn new(ctx: &Context, timing: bool) -> Result<Event> {
        let flags = if timing { 0 } else { sys::GAIO_EVENT_DISABLE_TIMING };
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_event_create(ctx.raw, flags, &mut raw) })?;
        Ok(Event { raw })
    }

    /// Moves the event to the point everything submitted to `stream` so far reaches.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        let _sub = stream.submit()?; // a held Future's fence goes in before the record
        check(unsafe { sys::gaio_event_record(self.raw, stream.raw) })
    }

    /// Whether the current point is reached (an event never recorded counts as
    /// reached); the recording stream's failure if it failed.
    pub fn is_done(&self) -> Result<bool> {
        match unsafe { sys::gaio_event_query(self.raw) } {
            sys::GAIO_ERR_NOT_READY => Ok(false),
            st => check(st).map(|_| true),
        }
    }

    /// Blocks until the current point is reached.
    pub fn synchronize(&self) -> Result<()> {
        check(unsafe { sys::gaio_event_synchronize(self.raw) })
    }

    /// A future of the current point: later records do not move it.
    pub fn future(&self) -> Result<Future> {
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_future_from_event(self.raw, &mut raw) })?;
        Ok(Future::wrap(raw))
    }

    /// Milliseconds from `self`'s point to `end`'s; both recorded with timing and both
    /// reached (Status::NotReady before).
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        let mut ms = 0f32;
        check(unsafe { sys::gaio_event_elapsed_ms(self.raw, end.raw, &mut ms) })?;
        Ok(ms)
    }
}

impl Stream {
    /// Work submitted here after this call starts only once `event`'s current point is
    /// reached.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let _sub = self.submit()?; // a held Future's fence goes in before the wait
        check(unsafe { sys::gaio_stream_wait_event(self.raw, event.raw) })
    }
}

crate::handle::handle!(Event, gaio_event, gaio_event_retain, gaio_event_release);
