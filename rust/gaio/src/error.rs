//! gaio's status and message as a Rust error.
use gaio_sys as sys;
use std::ffi::CStr;

/// gaio_status without GAIO_OK (see include/gaio/status.h for what each means).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    InvalidArg,
    NoMemory,
    NotReady,
    Timeout,
    NotSupported,
    NotFound,
    State,
    Device,
    Driver,
    System,
    Cancelled,
    User,
    /// A code this binding does not know (a newer libgaio).
    Other(i32),
}

impl Status {
    pub(crate) fn from_raw(st: sys::gaio_status) -> Status {
        match st {
            sys::GAIO_ERR_INVALID_ARG => Status::InvalidArg,
            sys::GAIO_ERR_NO_MEMORY => Status::NoMemory,
            sys::GAIO_ERR_NOT_READY => Status::NotReady,
            sys::GAIO_ERR_TIMEOUT => Status::Timeout,
            sys::GAIO_ERR_NOT_SUPPORTED => Status::NotSupported,
            sys::GAIO_ERR_NOT_FOUND => Status::NotFound,
            sys::GAIO_ERR_STATE => Status::State,
            sys::GAIO_ERR_DEVICE => Status::Device,
            sys::GAIO_ERR_DRIVER => Status::Driver,
            sys::GAIO_ERR_SYSTEM => Status::System,
            sys::GAIO_ERR_CANCELLED => Status::Cancelled,
            sys::GAIO_ERR_USER => Status::User,
            other => Status::Other(other),
        }
    }

    /// gaio's constant name, e.g. "GAIO_ERR_TIMEOUT".
    pub fn name(self) -> String {
        let raw = match self {
            Status::InvalidArg => sys::GAIO_ERR_INVALID_ARG,
            Status::NoMemory => sys::GAIO_ERR_NO_MEMORY,
            Status::NotReady => sys::GAIO_ERR_NOT_READY,
            Status::Timeout => sys::GAIO_ERR_TIMEOUT,
            Status::NotSupported => sys::GAIO_ERR_NOT_SUPPORTED,
            Status::NotFound => sys::GAIO_ERR_NOT_FOUND,
            Status::State => sys::GAIO_ERR_STATE,
            Status::Device => sys::GAIO_ERR_DEVICE,
            Status::Driver => sys::GAIO_ERR_DRIVER,
            Status::System => sys::GAIO_ERR_SYSTEM,
            Status::Cancelled => sys::GAIO_ERR_CANCELLED,
            Status::User => sys::GAIO_ERR_USER,
            Status::Other(x) => x,
        };
        cstr(unsafe { sys::gaio_status_string(raw) })
    }
}

/// A failed gaio call: its status and gaio's message naming the call and what was wrong.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}: {message}", .status.name())]
pub struct Error {
    pub status: Status,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn cstr(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// GAIO_OK, or the error with the calling thread's last message (read at once: the
/// next gaio call on this thread replaces it).
pub(crate) fn check(st: sys::gaio_status) -> Result<()> {
    if st == sys::GAIO_OK {
        Ok(())
    } else {
        Err(Error { status: Status::from_raw(st), message: cstr(unsafe { sys::gaio_last_error() }) })
    }
}

/// An error raised by the binding itself (checked before calling gaio).
pub(crate) fn invalid(message: String) -> Error {
    Error { status: Status::InvalidArg, message }
}
