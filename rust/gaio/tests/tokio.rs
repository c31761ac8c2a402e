//! gaio futures awaited under Tokio, on the host backend and the first GPU (SKIPPED
//! without one): current-thread and multi-thread runtimes, 10,000 futures from 8 tasks,
//! futures dropped while registered or leaked, awaits outside a runtime. Random data, the seed
//! printed.
mod common;
use common::{contexts, random, seed};
use gaio::{Context, DeviceBuffer, HostBuffer, Status, Stream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::future::Future as _;
use std::time::Duration;

async fn round_trip(ctx: &Context, data: &[u32]) -> Vec<u32> {
    let stream = Stream::new(ctx, 0).unwrap();
    let up = HostBuffer::from_slice(ctx, data).unwrap();
    let mut dev = DeviceBuffer::<u32>::new_async(&stream, data.len()).unwrap();
    let mut down = HostBuffer::<u32>::new(ctx, data.len()).unwrap();
    stream.copy(&mut dev, &up).unwrap().await.unwrap();
    stream.copy(&mut down, &dev).unwrap().await.unwrap();
    down.to_vec().unwrap()
}

#[test]
fn await_on_a_current_thread_runtime() {
    let mut s = seed();
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    for ctx in contexts("await_on_a_current_thread_runtime") {
        let data = random(&mut s, 65_537);
        assert_eq!(rt.block_on(round_trip(&ctx, &data)), data);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_futures_from_eight_tasks() {
    let mut s = seed();
    for ctx in contexts("ten_thousand_futures_from_eight_tasks") {
        let completed = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for t in 0..8u32 {
            let ctx = ctx.clone();
            let completed = Arc::clone(&completed);
            let fill = random(&mut s, 1)[0] as u8;
            tasks.push(tokio::spawn(async move {
                let stream = Stream::new(&ctx, 0).unwrap();
                let mut dev = DeviceBuffer::<u8>::new(&ctx, 256).unwrap();
                let mut host = HostBuffer::<u8>::new(&ctx, 256).unwrap();
                for i in 0..1250u32 {
                    let v = fill.wrapping_add((t * 1250 + i) as u8);
                    stream.fill_bytes(&mut dev, v).unwrap();
                    let f = stream.copy(&mut host, &dev).unwrap();
                    // Half awaited directly, half through a clone (each its own waiter).
                    if i % 2 == 0 { f.await.unwrap() } else { f.clone().await.unwrap() }
                    completed.fetch_add(1, Ordering::SeqCst);
                    assert!(host.as_slice().unwrap().iter().all(|&x| x == v));
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(completed.load(Ordering::SeqCst), 10_000);
    }
}

/// Futures dropped after registering (their task gave up) or leaked: the queue frees
/// what it holds when they complete, the work is intact, later futures complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_dropped_while_registered() {
    let mut s = seed();
    for ctx in contexts("futures_dropped_while_registered") {
        let n = 1 << 20;
        let data = random(&mut s, n);
        let up = HostBuffer::from_slice(&ctx, &data).unwrap();
        let mut down = HostBuffer::<u32>::new(&ctx, n).unwrap();
        let stream = Stream::new(&ctx, 0).unwrap();
        let mut dev = DeviceBuffer::<u32>::new_async(&stream, n).unwrap();
        for _ in 0..4 {
            let f = stream.copy(&mut dev, &up).unwrap();
            // A zero timeout polls once (registering it) and drops it.
            let _ = tokio::time::timeout(Duration::from_nanos(1), f).await;
        }
        let g = stream.copy(&mut down, &dev).unwrap();
        let mut g = Box::pin(g);
        let _ = futures_poll_once(g.as_mut()).await;
        std::mem::forget(g); // registered and leaked
        let other = Stream::new(&ctx, 0).unwrap();
        for _ in 0..8 {
            let mut junk = DeviceBuffer::<u32>::new_async(&other, n).unwrap();
            other.fill_bytes(&mut junk, 0xff).unwrap().await.unwrap();
        }
        stream.fence().unwrap().await.unwrap();
        assert_eq!(down.as_slice().unwrap(), &data[..]);
    }
}

/// Polls once and returns whether it was ready.
async fn futures_poll_once<F: std::future::Future + ?Sized>(f: std::pin::Pin<&mut F>) -> bool {
    struct Once<'a, F: ?Sized>(Option<std::pin::Pin<&'a mut F>>);
    impl<'a, F: std::future::Future + ?Sized> std::future::Future for Once<'a, F> {
        type Output = bool;
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<bool> {
            let f = self.0.take().expect("polled once");
            std::task::Poll::Ready(f.poll(cx).is_ready())
        }
    }
    Once(Some(f)).await
}

#[test]
fn awaited_outside_a_runtime_is_an_error() {
    let ctx = Context::new(0).unwrap();
    let stream = Stream::new(&ctx, 0).unwrap();
    // Twenty 16 MB fills ahead of it: the fence cannot be complete at its first poll.
    let mut dev = DeviceBuffer::<u8>::new(&ctx, 1 << 24).unwrap();
    for v in 0..20 {
        stream.fill_bytes(&mut dev, v).unwrap();
    }
    let f = stream.fence().unwrap();
    let waker = std::task::Waker::from(Arc::new(Noop));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = Box::pin(f);
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Err(e)) => {
            assert_eq!(e.status, Status::State);
            assert!(e.message.contains("outside a Tokio runtime"), "{}", e);
        }
        other => panic!("outside a runtime: {:?}, not the error", other.map(|r| r.is_ok())),
    }
    // Blocking on it works there.
    f.wait().unwrap();
}

struct Noop;
impl std::task::Wake for Noop {
    fn wake(self: Arc<Self>) {}
}
