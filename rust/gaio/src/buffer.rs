//! Typed buffers: device memory, and pinned host memory the host reads and writes.
//!
//! Work in flight holds its own reference to every buffer it uses, so dropping or
//! leaking a buffer never frees memory the device still uses. Host access is the one
//! place a race could reach Rust memory: each buffer remembers the completions of the
//! ops that used it and may still run (Stream::copy and the like record them), and
//! HostBuffer's slice accessors wait for those first; they take `&mut self`, so no op can be enqueued on
//! the buffer while a slice lives.
use crate::context::Context;
use crate::error::{check, invalid, Result};
use crate::future::Future;
use crate::stream::Stream;
use gaio_sys as sys;
use std::marker::PhantomData;
use crate::point::Point;
use std::sync::{Arc, Mutex};

/// Plain data: every bit pattern is a value, no drop glue (what device copies move).
///
/// # Safety
/// Implement only for types for which any bytes are a valid value and that have no
/// padding (their bytes are read as u8: `HostBuffer::as_bytes`).
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// gaio's dtype of it where tensors may hold it (0: none).
    #[doc(hidden)]
    const DTYPE: sys::gaio_dtype;
}
macro_rules! element {
    ($($t:ty => $d:expr),*) => {
        $(unsafe impl Element for $t {
            const DTYPE: sys::gaio_dtype = $d;
        })*
    };
}
element!(u8 => sys::GAIO_DTYPE_U8, u16 => sys::GAIO_DTYPE_U16, i16 => sys::GAIO_DTYPE_S16, i32 => sys::GAIO_DTYPE_S32,
         i64 => sys::GAIO_DTYPE_S64, f32 => sys::GAIO_DTYPE_F32, i8 => 0, u32 => 0, u64 => 0, f64 => 0);

/// What the stream ops take: a gaio buffer of `len` elements of T.
pub trait Memory<T> {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    #[doc(hidden)]
    fn raw(&self) -> *mut sys::gaio_buffer;
    #[doc(hidden)]
    fn used_until(&self, done: &Future);
}

/// The points after the ops that used a buffer and may still run: one per stream (a
/// later point in a stream comes after the earlier ones), so an op on another stream
/// still writing the buffer is waited for too.
#[derive(Default)]
pub(crate) struct LastUse(Mutex<Vec<Arc<Point>>>);

impl LastUse {
    pub(crate) fn set(&self, done: &Arc<Point>) {
        let mut uses = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Completed ones go too (a failed one as well: host access after it is sound,
        // and its failure reached whoever awaited that op).
        uses.retain(|p| (p.stream().is_null() || p.stream() != done.stream()) && p.peek_done().is_none());
        uses.push(Arc::clone(done));
    }

    /// Waits for every such op; the first failure among them, if any.
    fn wait(&self) -> Result<()> {
        let uses = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        let mut first = Ok(());
        for p in uses {
            let r = p.get().and_then(|f| check(unsafe { sys::gaio_future_wait(f, sys::GAIO_INFINITE) }));
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

struct Raw {
    raw: *mut sys::gaio_buffer,
    last_use: LastUse,
}

// gaio's buffer handles are thread-safe; host access goes through &mut (see above).
unsafe impl Send for Raw {}
unsafe impl Sync for Raw {}

impl Raw {
    /// `alloc(bytes, out)` for len elements of elem bytes (gaio refuses empty buffers:
    /// a zero-length one holds one byte nobody reads).
    fn alloc(what: &str, len: usize, elem: usize,
             alloc: impl FnOnce(usize, *mut *mut sys::gaio_buffer) -> sys::gaio_status) -> Result<Raw> {
        let bytes = len.checked_mul(elem).ok_or_else(|| invalid(format!("{}: {} elements overflow the size", what, len)))?;
        let mut raw = std::ptr::null_mut();
        check(alloc(bytes.max(1), &mut raw))?;
        Ok(Raw { raw, last_use: LastUse::default() })
    }
}

impl Raw {
    /// Takes over one reference to a buffer made elsewhere (a DLPack import).
    pub(crate) fn adopt(raw: *mut sys::gaio_buffer) -> Raw {
        Raw { raw, last_use: LastUse::default() }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        unsafe { sys::gaio_buffer_release(self.raw) };
    }
}

/// `len` elements of T in the device memory of a context (on the host device, host
/// memory only gaio's ops touch).
pub struct DeviceBuffer<T: Element> {
    b: Raw,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> DeviceBuffer<T> {
    /// Usable at once by every stream of the context.
    pub fn new(ctx: &Context, len: usize) -> Result<DeviceBuffer<T>> {
        let b = Raw::alloc("DeviceBuffer::new", len, std::mem::size_of::<T>(), |bytes, out| unsafe {
            sys::gaio_buffer_alloc(ctx.raw, sys::GAIO_MEM_DEVICE, bytes, out)
        })?;
        Ok(DeviceBuffer { b, len, _t: PhantomData })
    }

    /// From the stream-ordered pool: usable by work submitted to `stream` after this.
    pub fn new_async(stream: &Stream, len: usize) -> Result<DeviceBuffer<T>> {
        let _sub = stream.submit()?; // the allocation is a point in the stream too
        let b = Raw::alloc("DeviceBuffer::new_async", len, std::mem::size_of::<T>(), |bytes, out| unsafe {
            sys::gaio_buffer_alloc_async(stream.raw, sys::GAIO_MEM_DEVICE, bytes, out)
        })?;
        Ok(DeviceBuffer { b, len, _t: PhantomData })
    }

    pub(crate) fn last_use(&self) -> &LastUse {
        &self.b.last_use
    }

    pub(crate) fn adopt(raw: *mut sys::gaio_buffer, len: usize) -> DeviceBuffer<T> {
        DeviceBuffer { b: Raw::adopt(raw), len, _t: PhantomData }
    }

    /// The address the device uses, for kernels written outside gaio.
    pub fn device_ptr(&self) -> Result<*mut T> {
        let mut p = std::ptr::null_mut();
        check(unsafe { sys::gaio_buffer_device_ptr(self.b.raw, &mut p) })?;
        Ok(p as *mut T)
    }
}

/// Both buffer kinds hold a Raw `b` and their length.
macro_rules! memory {
    ($t:ident) => {
        impl<T: Element> Memory<T> for $t<T> {
            fn len(&self) -> usize {
                self.len
            }
            fn raw(&self) -> *mut sys::gaio_buffer {
                self.b.raw
            }
            fn used_until(&self, done: &Future) {
                self.b.last_use.set(&done.point)
            }
        }
    };
}
memory!(DeviceBuffer);
memory!(HostBuffer);

/// Their length without the Memory trait in scope.
macro_rules! len {
    ($t:ident) => {
        impl<T: Element> $t<T> {
            /// The number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            pub fn is_empty(&self) -> bool {
                self.len == 0
            }
        }
    };
}
len!(DeviceBuffer);
len!(HostBuffer);

macro_rules! debug {
    ($t:ident) => {
        impl<T: Element> std::fmt::Debug for $t<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!("gaio::", stringify!($t), "<{}>({:p}, {} elements)"), std::any::type_name::<T>(),
                       self.b.raw, self.len)
            }
        }
    };
}
debug!(DeviceBuffer);
debug!(HostBuffer);

/// `len` elements of T in pinned (page-locked) host memory: the fast way up and down.
/// Zeroed at creation.
pub struct HostBuffer<T: Element> {
    b: Raw,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> HostBuffer<T> {
    pub fn new(ctx: &Context, len: usize) -> Result<HostBuffer<T>> {
        let b = Raw::alloc("HostBuffer::new", len, std::mem::size_of::<T>(), |bytes, out| unsafe {
            sys::gaio_buffer_alloc(ctx.raw, sys::GAIO_MEM_PINNED, bytes, out)
        })?;
        let mut h = HostBuffer { b, len, _t: PhantomData };
        let p = h.host_ptr()?;
        unsafe { std::ptr::write_bytes(p, 0, len) }; // T is plain data: zero bytes are a value
        Ok(h)
    }

    pub(crate) fn adopt(raw: *mut sys::gaio_buffer, len: usize) -> HostBuffer<T> {
        HostBuffer { b: Raw::adopt(raw), len, _t: PhantomData }
    }

    pub fn from_slice(ctx: &Context, data: &[T]) -> Result<HostBuffer<T>> {
        let mut h = HostBuffer::new(ctx, data.len())?;
        h.as_mut_slice()?.copy_from_slice(data);
        Ok(h)
    }

    fn host_ptr(&mut self) -> Result<*mut T> {
        let mut p = std::ptr::null_mut();
        check(unsafe { sys::gaio_buffer_host_ptr(self.b.raw, &mut p) })?;
        Ok(p as *mut T)
    }

    /// The elements, once every op that used the buffer has finished (the first failure
    /// among them, if one failed). This blocks while they run: in async code, await
    /// their futures first.
    pub fn as_slice(&mut self) -> Result<&[T]> {
        self.b.last_use.wait()?;
        let p = self.host_ptr()?;
        Ok(unsafe { std::slice::from_raw_parts(p, self.len) })
    }

    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.b.last_use.wait()?;
        let p = self.host_ptr()?;
        Ok(unsafe { std::slice::from_raw_parts_mut(p, self.len) })
    }

    /// The elements' bytes (to send on a socket, say), as as_slice waits.
    pub fn as_bytes(&mut self) -> Result<&[u8]> {
        let n = self.len * std::mem::size_of::<T>();
        let s = self.as_slice()?;
        Ok(unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, n) })
    }

    /// The elements' bytes to write (to receive from a socket, say), as as_mut_slice waits.
    pub fn as_bytes_mut(&mut self) -> Result<&mut [u8]> {
        let n = self.len * std::mem::size_of::<T>();
        let s = self.as_mut_slice()?;
        Ok(unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, n) })
    }

    pub fn to_vec(&mut self) -> Result<Vec<T>> {
        Ok(self.as_slice()?.to_vec())
    }
}

