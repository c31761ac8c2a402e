//! What every gaio handle type shares: a raw pointer holding one reference; Clone
//! retains, Drop releases (work in flight holds its own references, so a drop never
//! waits and never frees what the device still uses), Debug shows the pointer, and
//! Send + Sync: gaio's objects take calls from any thread.
//!
//! `handle!(T, gaio_t, retain, release)` also makes `T::wrap(raw)`, which takes one
//! reference over, and `as_raw()`; `handle!(T, retain, release)` is for a type with
//! state of its own beside `raw`, which writes its `wrap`.
macro_rules! handle {
    ($t:ident, $raw:ident, $retain:ident, $release:ident) => {
        impl $t {
            /// Takes over one reference to raw.
            pub(crate) fn wrap(raw: *mut gaio_sys::$raw) -> $t {
                $t { raw }
            }

            /// The C handle, for calling libgaio (gaio-sys) directly; valid while self
            /// lives (retain it to keep it longer).
            pub fn as_raw(&self) -> *mut gaio_sys::$raw {
                self.raw
            }
        }
        crate::handle::handle!($t, $retain, $release);
    };
    ($t:ident, $retain:ident, $release:ident) => {
        unsafe impl Send for $t {}
        unsafe impl Sync for $t {}

        impl Clone for $t {
            fn clone(&self) -> $t {
                unsafe { gaio_sys::$retain(self.raw) };
                $t::wrap(self.raw)
            }
        }

        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!("gaio::", stringify!($t), "({:p})"), self.raw)
            }
        }

        impl Drop for $t {
            fn drop(&mut self) {
                unsafe { gaio_sys::$release(self.raw) };
            }
        }
    };
}
pub(crate) use handle;
