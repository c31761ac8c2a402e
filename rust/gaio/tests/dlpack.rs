//! DLPack on the host backend and the first GPU (SKIPPED without one): buffers exported
//! and imported back without copies, a tensor made here over a Rust Vec adopted with its
//! deleter run exactly once after the last op that used it, and bad tensors refused
//! with gaio's message (their deleter still run once). Random data, the seed printed.
mod common;
use common::{contexts, random, seed};
use gaio::{Context, DLPackTensor, DeviceBuffer, HostBuffer, Status, Stream};
use gaio::sys;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn export_and_import_back() {
    let mut s = seed();
    for ctx in contexts("export_and_import_back") {
        let gpu = ctx.is_gpu().unwrap();
        let stream = Stream::new(&ctx, 0).unwrap();
        let data: Vec<f32> = random(&mut s, 3 * 5 * 7).into_iter().map(|v| v as f32 / 7.0).collect();
        let up = HostBuffer::from_slice(&ctx, &data).unwrap();
        let mut dev = DeviceBuffer::<f32>::new(&ctx, data.len()).unwrap();
        stream.copy(&mut dev, &up).unwrap().wait().unwrap();

        let t = dev.to_dlpack(&[3, 5, 7]).unwrap();
        assert_eq!(t.version(), (1, 1));
        assert_eq!(t.shape(), &[3, 5, 7]);
        assert_eq!(t.dtype(), sys::DLDataType { code: sys::kDLFloat, bits: 32, lanes: 1 });
        assert_eq!(t.device().device_type, if gpu { sys::kDLCUDA } else { sys::kDLCPU });
        assert!(!t.is_read_only());
        assert_eq!(t.data_ptr() as usize, dev.device_ptr().unwrap() as usize);
        drop(dev); // the tensor holds its own reference

        let (back, shape) = DeviceBuffer::<f32>::from_dlpack(&ctx, t).unwrap();
        assert_eq!(shape, vec![3, 5, 7]);
        let mut down = HostBuffer::<f32>::new(&ctx, data.len()).unwrap();
        stream.copy(&mut down, &back).unwrap();
        assert_eq!(down.as_slice().unwrap(), &data[..]);

        let h = up.to_dlpack(&[105]).unwrap();
        assert_eq!(h.device().device_type, if gpu { sys::kDLCUDAHost } else { sys::kDLCPU });
        let (mut hb, _) = HostBuffer::<f32>::from_dlpack(&ctx, h).unwrap();
        assert_eq!(hb.as_slice().unwrap(), &data[..]);
    }
}

/// A DLPack tensor over a Vec<u16>, made the way a foreign producer would; its deleter
/// counts its calls and frees the Vec.
struct Made {
    _data: Vec<u16>,
    shape: [i64; 2],
    deleted: Arc<AtomicUsize>,
}

unsafe extern "C" fn made_deleter(t: *mut sys::DLManagedTensorVersioned) {
    let t = Box::from_raw(t);
    let made = Box::from_raw(t.manager_ctx as *mut Made);
    made.deleted.fetch_add(1, Ordering::SeqCst);
}

fn make(data: Vec<u16>, rows: i64, flags: u64, deleted: &Arc<AtomicUsize>) -> DLPackTensor {
    let cols = data.len() as i64 / rows;
    let mut made = Box::new(Made { _data: data, shape: [rows, cols], deleted: Arc::clone(deleted) });
    let dl_tensor = sys::DLTensor {
        data: made._data.as_mut_ptr() as *mut _,
        device: sys::DLDevice { device_type: sys::kDLCPU, device_id: 0 },
        ndim: 2,
        dtype: sys::DLDataType { code: sys::kDLUInt, bits: 16, lanes: 1 },
        shape: made.shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let t = Box::new(sys::DLManagedTensorVersioned {
        version: sys::DLPackVersion { major: 1, minor: 0 },
        manager_ctx: Box::into_raw(made) as *mut _,
        deleter: Some(made_deleter),
        flags,
        dl_tensor,
    });
    unsafe { DLPackTensor::from_raw(Box::into_raw(t)).unwrap() }
}

fn wait_for(count: &AtomicUsize, n: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    while count.load(Ordering::SeqCst) < n && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn foreign_tensor_deleted_once_after_its_last_use() {
    let mut s = seed();
    let ctx = Context::new(0).unwrap(); // host memory: the host context's own
    let data: Vec<u16> = random(&mut s, 4 * 1024).into_iter().map(|v| v as u16).collect();
    let deleted = Arc::new(AtomicUsize::new(0));
    let t = make(data.clone(), 4, 0, &deleted);
    let (buf, shape) = DeviceBuffer::<u16>::from_dlpack(&ctx, t).unwrap();
    assert_eq!(shape, vec![4, 1024]);
    let stream = Stream::new(&ctx, 0).unwrap();
    let mut down = HostBuffer::<u16>::new(&ctx, data.len()).unwrap();
    let done = stream.copy(&mut down, &buf).unwrap();
    drop(buf); // the copy in flight keeps the memory
    done.wait().unwrap();
    assert_eq!(down.as_slice().unwrap(), &data[..]);
    wait_for(&deleted, 1);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);
}

#[test]
fn bad_tensors_are_refused_and_deleted_once() {
    let ctx = Context::new(0).unwrap();
    let deleted = Arc::new(AtomicUsize::new(0));

    let e = DeviceBuffer::<f32>::from_dlpack(&ctx, make(vec![1; 8], 2, 0, &deleted)).unwrap_err();
    assert_eq!(e.status, Status::InvalidArg);
    assert!(e.message.contains("dtype") && e.message.contains("f32"), "{}", e);
    wait_for(&deleted, 1);
    assert_eq!(deleted.load(Ordering::SeqCst), 1);

    let e = DeviceBuffer::<u16>::from_dlpack(&ctx, make(vec![1; 8], 2, sys::DLPACK_FLAG_BITMASK_READ_ONLY, &deleted))
        .unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert!(e.message.contains("read-only"), "{}", e);
    assert_eq!(deleted.load(Ordering::SeqCst), 2);

    let mut wrong_major = make(vec![1; 8], 2, 0, &deleted);
    let raw = wrong_major.into_raw();
    unsafe { (*raw).version.major = 2 };
    wrong_major = unsafe { DLPackTensor::from_raw(raw).unwrap() };
    let e = DeviceBuffer::<u16>::from_dlpack(&ctx, wrong_major).unwrap_err();
    assert_eq!(e.status, Status::NotSupported);
    assert!(e.message.contains("DLPack 2.0"), "{}", e);
    assert_eq!(deleted.load(Ordering::SeqCst), 3);

    let buf = DeviceBuffer::<f32>::new(&ctx, 12).unwrap();
    let e = buf.to_dlpack(&[5, 2]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArg);
    assert!(e.message.contains("12 elements"), "{}", e);
    assert!(buf.to_dlpack(&[]).unwrap_err().message.contains("0 dimensions"));
    assert!(DeviceBuffer::<u32>::new(&ctx, 4).unwrap().to_dlpack(&[4]).unwrap_err().message.contains("u32"));
    assert!(unsafe { DLPackTensor::from_raw(std::ptr::null_mut()) }.is_err());
}
