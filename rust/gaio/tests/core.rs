//! The safe core on every device gaio sees: the host backend always, the first GPU
//! where there is one (else its tests say SKIPPED). Data is checked against what was
//! written: random values, the seed printed.
mod common;
use common::{contexts, random, seed};
use gaio::{Context, DeviceBuffer, Event, HostBuffer, Status, Stream};
use std::time::Duration;

#[test]
fn devices_start_with_the_host() {
    let d = gaio::devices().unwrap();
    assert!(!d.is_empty());
    assert!(!d[0].is_gpu, "device 0 is the host");
    assert!(gaio::version() >= 100);
}

#[test]
fn round_trip_through_device_memory() {
    let mut s = seed();
    for ctx in contexts("round_trip_through_device_memory") {
        for deferred in [false, true] {
            let stream = if deferred { Stream::deferred(&ctx, 0) } else { Stream::new(&ctx, 0) }.unwrap();
            assert_eq!(stream.is_deferred().unwrap(), deferred);
            let data = random(&mut s, 100_003);
            let up = HostBuffer::from_slice(&ctx, &data).unwrap();
            let mut dev = DeviceBuffer::<u32>::new_async(&stream, data.len()).unwrap();
            let mut down = HostBuffer::<u32>::new(&ctx, data.len()).unwrap();
            stream.copy(&mut dev, &up).unwrap();
            let done = stream.copy(&mut down, &dev).unwrap();
            // as_slice waits for the copy itself; the future says the same.
            assert_eq!(down.as_slice().unwrap(), &data[..]);
            assert!(done.wait_for(Duration::from_secs(10)).unwrap());
            assert!(matches!(done.poll_done(), Some(Ok(()))));
        }
    }
}

#[test]
fn fill_and_join() {
    for ctx in contexts("fill_and_join") {
        let a = Stream::new(&ctx, 0).unwrap();
        let b = Stream::new(&ctx, 0).unwrap();
        let mut x = DeviceBuffer::<u8>::new(&ctx, 4096).unwrap();
        let mut y = HostBuffer::<u8>::new(&ctx, 4096).unwrap();
        let f1 = a.fill_bytes(&mut x, 0x5a).unwrap();
        f1.wait().unwrap();
        let f2 = b.copy(&mut y, &x).unwrap();
        let all = gaio::Future::join(&[&f1, &f2]).unwrap();
        all.wait().unwrap();
        assert!(y.as_slice().unwrap().iter().all(|&v| v == 0x5a));
        a.synchronize().unwrap();
        ctx.synchronize().unwrap();
    }
}

#[test]
fn errors_carry_gaio_status_and_message() {
    let ctx = Context::new(0).unwrap();
    let stream = Stream::new(&ctx, 0).unwrap();
    let mut a = DeviceBuffer::<f32>::new(&ctx, 10).unwrap();
    let b = HostBuffer::<f32>::new(&ctx, 11).unwrap();
    let e = stream.copy(&mut a, &b).unwrap_err();
    assert_eq!(e.status, Status::InvalidArg);
    assert!(e.message.contains("10") && e.message.contains("11"), "{}", e);
    let e = Context::new(1 << 20).err().expect("no such device");
    assert!(!e.message.is_empty(), "{:?}", e);
    assert!(e.to_string().starts_with("GAIO_ERR_"), "{}", e);
    let e = Stream::new(&ctx, 1 << 20).err().expect("no such priority");
    assert_eq!(e.status, Status::InvalidArg, "{}", e);
    assert!(e.message.contains("priority"), "{}", e);
}

/// Dropping or forgetting a future, a stream or a buffer with work in flight never lets
/// the memory go early: after churning the pools on other streams, the data is intact.
#[test]
fn dropped_and_leaked_handles_keep_work_intact() {
    let mut s = seed();
    for ctx in contexts("dropped_and_leaked_handles_keep_work_intact") {
        let n = 1 << 20;
        let data = random(&mut s, n);
        let up = HostBuffer::from_slice(&ctx, &data).unwrap();
        let mut down = HostBuffer::<u32>::new(&ctx, n).unwrap();
        {
            let stream = Stream::new(&ctx, 0).unwrap();
            let mut dev = DeviceBuffer::<u32>::new_async(&stream, n).unwrap();
            let f = stream.copy(&mut dev, &up).unwrap();
            drop(f); // a future dropped before completion
            let g = stream.copy(&mut down, &dev).unwrap();
            std::mem::forget(g); // a future leaked
            drop(dev); // a buffer the copies still use
            std::mem::forget(stream); // a stream with work in flight, leaked
        }
        // Pool churn on other streams: same-sized blocks allocated and written.
        let other = Stream::new(&ctx, 0).unwrap();
        for _ in 0..8 {
            let mut junk = DeviceBuffer::<u32>::new_async(&other, n).unwrap();
            other.fill_bytes(&mut junk, 0xff).unwrap();
        }
        other.synchronize().unwrap();
        assert_eq!(down.as_slice().unwrap(), &data[..]);
    }
}

#[test]
fn empty_buffers_copy_nothing() {
    let ctx = Context::new(0).unwrap();
    let stream = Stream::new(&ctx, 0).unwrap();
    let mut a = DeviceBuffer::<u64>::new(&ctx, 0).unwrap();
    let mut b = HostBuffer::<u64>::new(&ctx, 0).unwrap();
    assert!(a.is_empty());
    stream.copy(&mut a, &b).unwrap().wait().unwrap();
    assert!(b.to_vec().unwrap().is_empty());
}

/// An event orders two streams without the host: stream b copies what stream a filled
/// only once a's event is reached. Timing events give a non-negative time; events
/// without timing, or never recorded, are errors with gaio's message.
#[test]
fn events_order_streams_and_time_them() {
    let mut s = seed();
    for ctx in contexts("events_order_streams_and_time_them") {
        let (a, b) = (Stream::new(&ctx, 0).unwrap(), Stream::new(&ctx, 0).unwrap());
        let n = 1 << 22;
        let mut dev = DeviceBuffer::<u8>::new(&ctx, n).unwrap();
        let mut host = HostBuffer::<u8>::new(&ctx, n).unwrap();
        let (start, end) = (Event::new(&ctx, true).unwrap(), Event::new(&ctx, true).unwrap());
        let fill = random(&mut s, 1)[0] as u8 | 1;
        start.record(&a).unwrap();
        for v in 0..8u8 {
            a.fill_bytes(&mut dev, fill.wrapping_add(v)).unwrap(); // the last one wins
        }
        end.record(&a).unwrap();
        let reached = end.future().unwrap();
        b.wait_event(&end).unwrap();
        b.copy(&mut host, &dev).unwrap();
        assert!(host.as_slice().unwrap().iter().all(|&x| x == fill.wrapping_add(7)));
        reached.wait().unwrap();
        start.synchronize().unwrap();
        end.synchronize().unwrap();
        assert!(end.is_done().unwrap());
        let ms = start.elapsed_ms(&end).unwrap();
        assert!(ms >= 0.0 && ms < 60_000.0, "{} ms", ms);

        let untimed = Event::new(&ctx, false).unwrap();
        untimed.record(&a).unwrap();
        untimed.synchronize().unwrap();
        let e = start.elapsed_ms(&untimed).unwrap_err();
        assert_eq!(e.status, Status::InvalidArg);
        assert!(e.message.contains("DISABLE_TIMING"), "{}", e);
        let never = Event::new(&ctx, true).unwrap();
        assert!(never.is_done().unwrap(), "an event never recorded counts as reached");
        let e = start.elapsed_ms(&never).unwrap_err();
        assert_eq!(e.status, Status::State);
        assert!(e.message.contains("never recorded"), "{}", e);
    }
}

/// Host access waits for every stream's ops on a buffer, not only the latest: a write
/// queued behind slow work on one stream, then a quick read of the same buffer on
/// another (the latest use, done long before the write lands).
#[test]
fn host_access_waits_for_every_stream() {
    let mut s = seed();
    for ctx in contexts("host_access_waits_for_every_stream") {
        let n = 1 << 20;
        let (a, b) = (Stream::new(&ctx, 0).unwrap(), Stream::new(&ctx, 0).unwrap());
        let mut slow = DeviceBuffer::<u8>::new(&ctx, 1 << 28).unwrap();
        for v in 0..8 {
            a.fill_bytes(&mut slow, v).unwrap();
        }
        let v = random(&mut s, 1)[0] as u8 | 1;
        let mut src = DeviceBuffer::<u8>::new(&ctx, n).unwrap();
        let mut host = HostBuffer::<u8>::new(&ctx, n).unwrap();
        a.fill_bytes(&mut src, v).unwrap();
        a.copy(&mut host, &src).unwrap(); // the write, on a, behind 2 GiB of fills
        let mut sink = DeviceBuffer::<u8>::new(&ctx, n).unwrap();
        b.copy(&mut sink, &host).unwrap().wait().unwrap(); // the latest use, on b, done
        assert!(host.as_slice().unwrap().iter().all(|&x| x == v));
    }
}

static GATE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A host kernel that holds its stream until GATE opens.
unsafe extern "C" fn gate(_info: *const gaio::LaunchInfo, _args: *const *mut std::os::raw::c_void) -> i32 {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while !GATE.load(std::sync::atomic::Ordering::Acquire) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    0
}

/// A Future the caller holds completes with its own op, not with ops submitted after
/// it (its fence is made lazily, but before the next op goes in): here the next op
/// waits on a stream held shut by a host kernel, which opens only after the check.
#[test]
fn a_held_future_completes_with_its_op() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        println!("a_held_future_completes_with_its_op: SKIPPED: the host backend needs two workers here");
        return;
    }
    let mut s = seed();
    let ctx = Context::new(0).unwrap();
    let k = unsafe { gaio::Kernel::register_host("rust_test_gate", gate, &[]) }.unwrap();
    let (a, b) = (Stream::new(&ctx, 0).unwrap(), Stream::new(&ctx, 0).unwrap());
    let one = gaio::Dim3 { x: 1, y: 1, z: 1 };
    unsafe { b.launch(&k, one, one, 0, &[]) }.unwrap();
    let shut = Event::new(&ctx, false).unwrap();
    shut.record(&b).unwrap();

    let data = random(&mut s, 1000);
    let up = HostBuffer::from_slice(&ctx, &data).unwrap();
    let mut dev = DeviceBuffer::<u32>::new(&ctx, data.len()).unwrap();
    let held = a.copy(&mut dev, &up).unwrap();
    let dropped = a.copy(&mut dev, &up).unwrap();
    drop(dropped);
    let held_too = a.fill_bytes(&mut dev, 7).unwrap();
    a.wait_event(&shut).unwrap(); // everything after this waits for the gate
    let mut down = HostBuffer::<u32>::new(&ctx, data.len()).unwrap();
    let after = a.copy(&mut down, &dev).unwrap();
    let ok = (held.wait_for(Duration::from_secs(10)).unwrap(), held_too.wait_for(Duration::from_secs(10)).unwrap());
    let early = after.poll_done().is_some();
    GATE.store(true, std::sync::atomic::Ordering::Release);
    a.synchronize().unwrap();
    assert_eq!(ok, (true, true), "a held future waited for ops submitted after it");
    assert!(!early, "the op behind the gate completed before it opened");
    assert!(down.as_slice().unwrap().iter().all(|&x| x == 0x0707_0707));
    gaio::Kernel::unregister("rust_test_gate").unwrap();
}

/// Contexts made with options; a buffer's bytes seen as u8 both ways.
#[test]
fn context_options_and_byte_views() {
    let mut s = seed();
    let opts = gaio::ContextOptions { pool_release_threshold: 1 << 30, rng_seed: 5 };
    let ctx = Context::with_options(0, &opts).unwrap();
    let e = Context::with_options(1 << 20, &opts).unwrap_err();
    assert!(!e.message.is_empty(), "{:?}", e);
    let data = random(&mut s, 33);
    let mut h = HostBuffer::from_slice(&ctx, &data).unwrap();
    let want: Vec<u8> = data.iter().flat_map(|v| v.to_ne_bytes()).collect();
    assert_eq!(h.as_bytes().unwrap(), &want[..]);
    h.as_bytes_mut().unwrap()[..4].copy_from_slice(&7u32.to_ne_bytes());
    assert_eq!(h.as_slice().unwrap()[0], 7);
}

/// A foreign native stream wrapped (here a gaio stream's own, standing in for PyTorch's):
/// ops through the wrapper run in order with the owner's; dropping the wrapper leaves
/// the native stream alive. The host has no native streams: an error says so. Streams
/// of the device's top priority.
#[test]
fn foreign_streams_and_priorities() {
    let mut s = seed();
    for ctx in contexts("foreign_streams_and_priorities") {
        let props = gaio::device_props(ctx.device().unwrap()).unwrap();
        let urgent = Stream::new(&ctx, props.max_priority).unwrap();
        assert_eq!(urgent.priority().unwrap(), props.max_priority);
        let owner = Stream::new(&ctx, 0).unwrap();
        let native = owner.native().unwrap();
        if !ctx.is_gpu().unwrap() {
            assert!(native.is_null());
            let e = unsafe { Stream::from_raw(&ctx, std::ptr::null_mut()) }.unwrap_err();
            assert!(!e.message.is_empty());
            continue;
        }
        let data = random(&mut s, 1 << 16);
        let up = HostBuffer::from_slice(&ctx, &data).unwrap();
        let mut dev = DeviceBuffer::<u32>::new(&ctx, data.len()).unwrap();
        let mut down = HostBuffer::<u32>::new(&ctx, data.len()).unwrap();
        {
            let wrapped = unsafe { Stream::from_raw(&ctx, native) }.unwrap();
            assert_eq!(wrapped.native().unwrap(), native);
            owner.fill_bytes(&mut dev, 0).unwrap();
            wrapped.copy(&mut dev, &up).unwrap(); // after the fill: one native stream
            wrapped.synchronize().unwrap();
        }
        owner.copy(&mut down, &dev).unwrap(); // the native stream outlived its wrapper
        assert_eq!(down.as_slice().unwrap(), &data[..]);
    }
}
