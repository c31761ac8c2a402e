//! What every gaio handle type shares: a raw pointer holding one reference (each type's
//! `wrap(raw)` takes one over); Clone retains, Drop releases (work in flight holds its own references, so a drop never
//! waits and never frees what the device still uses), Debug shows the pointer.
macro_rules! handle {
    ($t:ident, $retain:ident, $release:ident) => {
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
