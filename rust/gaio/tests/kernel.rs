//! Kernels: a host kernel registered from Rust, launched on the host backend against a
//! direct computation; argument checks; a CUDA C++ kernel compiled with NVRTC and
//! launched on the first GPU (SKIPPED without one) against the same computation.
mod common;
use common::{contexts, random, seed};
use gaio::{host_arg, Arg, DeviceBuffer, Dim3, HostBuffer, Kernel, LaunchInfo, Library, Status, Stream};
use std::os::raw::c_void;

/// y[i] = a * x[i] + y[i] for i < n: arguments a (f32), x, y (buffers), n (u64).
unsafe extern "C" fn axpy(_info: *const LaunchInfo, args: *const *mut c_void) -> i32 {
    let a: f32 = host_arg(args, 0);
    let x: *const f32 = host_arg(args, 1);
    let y: *mut f32 = host_arg(args, 2);
    let n: u64 = host_arg(args, 3);
    for i in 0..n as usize {
        *y.add(i) += a * *x.add(i);
    }
    0
}

const AXPY_CU: &str = r#"
extern "C" __global__ void rust_test_axpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn floats(seed: &mut u64, n: usize) -> Vec<f32> {
    random(seed, n).into_iter().map(|v| (v % 1000) as f32 / 100.0).collect()
}

fn run_axpy(ctx: &gaio::Context, k: &Kernel, seed: &mut u64, gpu: bool) {
    let n = 10_000usize;
    let (x, y) = (floats(seed, n), floats(seed, n));
    let a = 1.5f32;
    let stream = Stream::new(ctx, 0).unwrap();
    let (ux, uy) = (HostBuffer::from_slice(ctx, &x).unwrap(), HostBuffer::from_slice(ctx, &y).unwrap());
    let mut dx = DeviceBuffer::<f32>::new(ctx, n).unwrap();
    let mut dy = DeviceBuffer::<f32>::new(ctx, n).unwrap();
    stream.copy(&mut dx, &ux).unwrap();
    stream.copy(&mut dy, &uy).unwrap();
    let grid = if gpu { Dim3 { x: ((n + 255) / 256) as u32, y: 1, z: 1 } } else { Dim3 { x: 1, y: 1, z: 1 } };
    let block = Dim3 { x: if gpu { 256 } else { 1 }, y: 1, z: 1 };
    let args = [Arg::value(&a), Arg::buffer(&dx), Arg::buffer(&dy), Arg::value(&(n as u64))];
    unsafe { stream.launch(k, grid, block, 0, &args) }.unwrap();
    let mut down = HostBuffer::<f32>::new(ctx, n).unwrap();
    stream.copy(&mut down, &dy).unwrap();
    let got = down.to_vec().unwrap();
    for i in 0..n {
        let want = a * x[i] + y[i];
        assert!((got[i] - want).abs() <= 1e-5 * want.abs().max(1.0), "y[{}] = {}, want {}", i, got[i], want);
    }
}

#[test]
fn host_and_device_kernels_launch_by_name() {
    let mut s = seed();
    let name = "rust_test_axpy";
    let k = unsafe { Kernel::register_host(name, axpy, &[4, 8, 8, 8]) }.unwrap();
    assert_eq!(k.name(), name);
    assert_eq!(Kernel::find(name).unwrap().name(), name);
    for ctx in contexts("host_and_device_kernels_launch_by_name") {
        let gpu = ctx.is_gpu().unwrap();
        if gpu {
            // The device code joins the host kernel's name: one launch call for both.
            let lib = match Library::compile(AXPY_CU, "axpy.cu", &[]) {
                Ok(l) => l,
                Err(e) if e.status == Status::Driver || e.status == Status::NotSupported => {
                    println!("host_and_device_kernels_launch_by_name: GPU part SKIPPED: no NVRTC: {}", e);
                    continue;
                }
                Err(e) => panic!("{}", e),
            };
            let dk = lib.kernel(name).unwrap();
            run_axpy(&ctx, &dk, &mut s, true);
        } else {
            run_axpy(&ctx, &k, &mut s, false);
        }
    }
}

#[test]
fn launches_with_wrong_arguments_are_refused() {
    let name = "rust_test_count";
    unsafe extern "C" fn nothing(_: *const LaunchInfo, _: *const *mut c_void) -> i32 {
        0
    }
    let k = unsafe { Kernel::register_host(name, nothing, &[4, 8]) }.unwrap();
    let ctx = gaio::Context::new(0).unwrap();
    let stream = Stream::new(&ctx, 0).unwrap();
    let one = Dim3 { x: 1, y: 1, z: 1 };
    let e = unsafe { stream.launch(&k, one, one, 0, &[Arg::value(&1u32)]) }.unwrap_err();
    assert_eq!(e.status, Status::InvalidArg, "{}", e);
    let e = unsafe { stream.launch(&k, one, one, 0, &[Arg::value(&1u64), Arg::value(&1u64)]) }.unwrap_err();
    assert_eq!(e.status, Status::InvalidArg, "{}", e);
    unsafe { stream.launch(&k, one, one, 0, &[Arg::value(&1u32), Arg::value(&1u64)]) }.unwrap().wait().unwrap();
    let e = Kernel::find("rust_test_no_such_kernel").unwrap_err();
    assert_eq!(e.status, Status::NotFound, "{}", e);
    Kernel::unregister(name).unwrap();
    assert!(Kernel::find(name).is_err());
}
