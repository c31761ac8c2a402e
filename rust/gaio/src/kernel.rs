//! Kernels and libraries: named device functions launched in stream order. A name is
//! registered once per process: a host function (`Kernel::register_host`) or device
//! code from a Library (a cubin, fatbin or PTX image, or CUDA C++ compiled with NVRTC),
//! so one `Stream::launch` runs on whichever device the stream belongs to. gaio checks
//! the arguments' count and sizes against the kernel's where it knows them (host
//! kernels: as registered; device kernels: from the driver).
use crate::buffer::{DeviceBuffer, Element, LastUse, Memory};
use crate::error::{check, cstr, invalid, Result};
use crate::future::Future;
use crate::stream::Stream;
use gaio_sys as sys;
use std::ffi::CString;
use std::path::Path;
use std::ptr;

pub use sys::gaio_dim3 as Dim3;
pub use sys::gaio_launch_info as LaunchInfo;

/// A host kernel: `args[i]` points to a copy of argument i (for a buffer argument, to a
/// pointer holding its address); it covers the whole grid itself. A status other than
/// 0 (GAIO_OK) fails the stream.
pub type HostKernelFn = unsafe extern "C" fn(info: *const LaunchInfo, args: *const *mut std::os::raw::c_void) -> i32;

fn c_name(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| invalid(format!("{}: a NUL in {:?}", what, s)))
}

pub struct Kernel {
    pub(crate) raw: *mut sys::gaio_kernel,
}

impl Kernel {
    /// The kernel registered under `name` (by a host registration or a library).
    pub fn find(name: &str) -> Result<Kernel> {
        let n = c_name("Kernel::find", name)?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_kernel_find(n.as_ptr(), &mut raw) })?;
        Ok(Kernel { raw })
    }

    /// Registers a host kernel under `name`, taking arguments of `arg_sizes` bytes.
    ///
    /// # Safety
    /// `f` must read its arguments as those sizes say and touch no memory but theirs.
    pub unsafe fn register_host(name: &str, f: HostKernelFn, arg_sizes: &[usize]) -> Result<Kernel> {
        let n = c_name("Kernel::register_host", name)?;
        let mut raw = ptr::null_mut();
        check(sys::gaio_kernel_register(n.as_ptr(), Some(f), arg_sizes.len(), arg_sizes.as_ptr(), &mut raw))?;
        Ok(Kernel { raw })
    }

    /// Removes the name; handles and launches in flight keep the kernel alive.
    pub fn unregister(name: &str) -> Result<()> {
        let n = c_name("Kernel::unregister", name)?;
        check(unsafe { sys::gaio_kernel_unregister(n.as_ptr()) })
    }

    pub fn name(&self) -> String {
        cstr(unsafe { sys::gaio_kernel_name(self.raw) })
    }
}

/// Device code loaded once for every device and context of the process.
pub struct Library {
    raw: *mut sys::gaio_library,
}

impl Library {
    /// A cubin, fatbin or PTX image file.
    pub fn load_file(path: impl AsRef<Path>) -> Result<Library> {
        let p = c_name("Library::load_file", &path.as_ref().to_string_lossy())?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_library_load_file(p.as_ptr(), &mut raw) })?;
        Ok(Library { raw })
    }

    /// A cubin, fatbin or PTX image in memory (PTX: with its terminating NUL).
    pub fn load_data(image: &[u8]) -> Result<Library> {
        if image.is_empty() {
            return Err(invalid("Library::load_data: an empty image".to_string()));
        }
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_library_load_data(image.as_ptr() as *const _, &mut raw) })?;
        Ok(Library { raw })
    }

    /// CUDA C++ compiled with NVRTC (options as NVRTC's: "-arch=sm_90", "-DN=4");
    /// kernels meant for launch should be `extern "C"`. A compile error carries the
    /// compiler's log in its message.
    pub fn compile(source: &str, program_name: &str, options: &[&str]) -> Result<Library> {
        let src = c_name("Library::compile", source)?;
        let name = c_name("Library::compile", program_name)?;
        let opts = options.iter().map(|o| c_name("Library::compile", o)).collect::<Result<Vec<_>>>()?;
        let ptrs: Vec<*const std::os::raw::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut log = vec![0 as std::os::raw::c_char; 8192];
        let mut raw = ptr::null_mut();
        let st = unsafe {
            sys::gaio_library_compile(src.as_ptr(), name.as_ptr(), ptrs.as_ptr(), ptrs.len(), log.as_mut_ptr(),
                                      log.len(), &mut raw)
        };
        if let Err(mut e) = check(st) {
            let full = cstr(log.as_ptr());
            if !full.is_empty() {
                e.message = format!("{}\n{}", e.message, full);
            }
            return Err(e);
        }
        Ok(Library { raw })
    }

    /// The library's kernel `name`, registered under that name.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let n = c_name("Library::kernel", name)?;
        let mut raw = ptr::null_mut();
        check(unsafe { sys::gaio_library_get_kernel(self.raw, n.as_ptr(), &mut raw) })?;
        Ok(Kernel { raw })
    }
}

/// One argument of a launch: a value (its bytes copied at launch) or a device buffer
/// (its address, offset by whole elements; the launch keeps it alive and it remembers
/// the launch).
pub struct Arg<'a> {
    raw: sys::gaio_arg,
    value: Vec<u8>,
    last_use: Option<&'a LastUse>,
}

impl<'a> Arg<'a> {
    pub fn value<T: Copy>(v: &T) -> Arg<'a> {
        let bytes = unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) };
        Arg {
            raw: sys::gaio_arg { value: ptr::null(), size: bytes.len(), buffer: ptr::null_mut(), offset: 0 },
            value: bytes.to_vec(),
            last_use: None,
        }
    }

    pub fn buffer<T: Element>(buf: &'a DeviceBuffer<T>) -> Arg<'a> {
        Arg::buffer_at(buf, 0)
    }

    /// The address of element `at` of buf (checked by gaio against the buffer's size).
    pub fn buffer_at<T: Element>(buf: &'a DeviceBuffer<T>, at: usize) -> Arg<'a> {
        Arg {
            raw: sys::gaio_arg {
                value: ptr::null(),
                size: std::mem::size_of::<*const u8>(),
                buffer: buf.raw(),
                offset: at.saturating_mul(std::mem::size_of::<T>()),
            },
            value: Vec::new(),
            last_use: Some(buf.last_use()),
        }
    }
}

impl Stream {
    /// Launches `kernel` over `grid` blocks of `block` threads (a host kernel covers
    /// the grid itself) with `shared_mem` bytes of shared memory.
    ///
    /// # Safety
    /// The kernel reads and writes what its code says: gaio checks the arguments' count
    /// and sizes, not what the kernel does with them.
    pub unsafe fn launch(&self, kernel: &Kernel, grid: Dim3, block: Dim3, shared_mem: usize, args: &[Arg<'_>])
                         -> Result<Future> {
        let raws: Vec<sys::gaio_arg> = args
            .iter()
            .map(|a| {
                let mut r = a.raw;
                if r.buffer.is_null() {
                    r.value = a.value.as_ptr() as *const _;
                }
                r
            })
            .collect();
        let uses: Vec<&crate::buffer::LastUse> = args.iter().filter_map(|a| a.last_use).collect();
        self.op(&uses, || sys::gaio_launch(self.raw, kernel.raw, grid, block, shared_mem, raws.as_ptr(), raws.len()))
    }
}

/// A host kernel's argument i as T (what `register_host`'s sizes promised).
///
/// # Safety
/// Argument i must exist and be `size_of::<T>()` bytes.
pub unsafe fn host_arg<T: Copy>(args: *const *mut std::os::raw::c_void, i: usize) -> T {
    *(*args.add(i) as *const T)
}

crate::handle::handle!(Kernel, gaio_kernel, gaio_kernel_retain, gaio_kernel_release);
crate::handle::handle!(Library, gaio_library, gaio_library_retain, gaio_library_release);
