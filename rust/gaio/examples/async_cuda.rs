//! The async-cuda crate's documented DeviceBuffer example, done with gaio; then what
//! async-cuda forbids and gaio allows.
//!
//! async-cuda sends every CUDA call to one runtime thread as a closure, and an op's
//! future borrows the data that closure uses. Its README therefore forbids dropping such
//! a future before it completes and leaking it with `mem::forget`: the runtime thread
//! would go on using memory Rust has freed or reused, which is undefined behaviour, so
//! its API is `unsafe` by design. In gaio the work in flight holds its own references to
//! every buffer it uses and a future is only a ticket for its completion: dropping or
//! leaking one, or leaking a buffer that work still reads, leaks at worst. This example
//! does each of those on a copy in flight, churns the memory pools on other streams (so
//! that memory freed too early would be handed out again and overwritten), and checks
//! that the data still arrived intact.
//!
//!     cd rust && cargo run --example async_cuda
//!
//! Runs on the first GPU, else on the host backend. Exit status 0 when every check passed.
use gaio::{Context, DeviceBuffer, HostBuffer, Stream};
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::task::{Context as TaskContext, Poll};

type Failure = Box<dyn std::error::Error>;

/// Large enough that a copy is still in flight when its future is dropped or leaked.
const BIG: usize = 32 << 20;
/// Buffers of BIG bytes allocated, overwritten and freed on other streams meanwhile.
const CHURN: usize = 16;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("async_cuda: no Tokio runtime: {}", e);
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => {
            println!("async_cuda: OK");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("async_cuda: {}", e);
            println!("async_cuda: FAILED");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Failure> {
    let ctx = Context::best()?;
    let props = gaio::device_props(ctx.device()?)?;
    println!("async_cuda: on gaio device {} ({})", props.index, props.name);
    documented_example(&ctx).await?;
    forbidden_in_async_cuda(&ctx).await
}

/// async-cuda's example line for line: 100 ones up to the device and back.
async fn documented_example(ctx: &Context) -> Result<(), Failure> {
    let stream = Stream::new(ctx, 0)?;
    let all_ones = vec![1u8; 100];
    let host_buffer = HostBuffer::from_slice(ctx, &all_ones)?;
    // async-cuda's DeviceBuffer::new(100, &stream) allocates in stream order too.
    let mut device_buffer = DeviceBuffer::<u8>::new_async(&stream, 100)?;
    stream.copy(&mut device_buffer, &host_buffer)?.await?;
    let mut return_host_buffer = HostBuffer::<u8>::new(ctx, 100)?;
    stream.copy(&mut return_host_buffer, &device_buffer)?.await?;
    compare("the documented example", return_host_buffer.as_slice()?, &all_ones)?;
    println!("async_cuda: the documented example: 100 ones up to the device and back: OK");
    Ok(())
}

/// A copy up and a copy down whose futures are dropped and leaked, whose buffers are
/// leaked and dropped while the copies run, with pool churn on other streams meanwhile.
async fn forbidden_in_async_cuda(ctx: &Context) -> Result<(), Failure> {
    let stream = Stream::new(ctx, 0)?;
    let want = pattern(BIG);
    let staging = HostBuffer::from_slice(ctx, &want)?;
    let mut device = DeviceBuffer::<u8>::new_async(&stream, BIG)?;
    let mut back = HostBuffer::<u8>::new(ctx, BIG)?;
    let mib = BIG >> 20;

    let (up, pending) = PollOnce(Some(stream.copy(&mut device, &staging)?)).await;
    drop(up);
    println!("async_cuda: the {} MiB upload's future polled once and dropped ({})", mib, state(pending));

    std::mem::forget(staging);
    println!("async_cuda: the staging buffer the upload reads forgotten with std::mem::forget");

    let (down, pending) = PollOnce(Some(stream.copy(&mut back, &device)?)).await;
    std::mem::forget(down);
    println!("async_cuda: the download's future polled once and forgotten with std::mem::forget ({})", state(pending));

    drop(device);
    println!("async_cuda: the device buffer the download reads dropped");

    churn(ctx).await?;
    println!("async_cuda: {} buffers of {} MiB allocated, filled with 0xEE and freed on 4 other streams", CHURN, mib);

    stream.fence()?.await?;
    compare("the data that crossed while its futures and buffers were dropped or leaked", back.as_slice()?, &want)?;
    println!("async_cuda: the {} MiB came back intact", mib);
    Ok(())
}

/// Allocates, overwrites and frees device memory from the pool on other streams: had
/// the dropped device buffer gone back to the pool while the download read it, this
/// would reuse and overwrite it.
async fn churn(ctx: &Context) -> Result<(), Failure> {
    let streams = (0..4).map(|_| Stream::new(ctx, 0)).collect::<Result<Vec<_>, _>>()?;
    for i in 0..CHURN {
        let s = &streams[i % streams.len()];
        let mut junk = DeviceBuffer::<u8>::new_async(s, BIG)?;
        s.fill_bytes(&mut junk, 0xEE)?;
    }
    for s in &streams {
        s.fence()?.await?;
    }
    Ok(())
}

/// Polls a future once, registering it with the runtime as an `.await` would, and hands
/// it back with whether it was still pending: the caller then drops or leaks it.
struct PollOnce<F>(Option<F>);

impl<F: Future + Unpin> Future for PollOnce<F> {
    type Output = (F, bool);

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<(F, bool)> {
        let mut fut = self.0.take().expect("PollOnce is polled once");
        let pending = Pin::new(&mut fut).poll(cx).is_pending();
        Poll::Ready((fut, pending))
    }
}

fn state(pending: bool) -> &'static str {
    if pending {
        "while the copy was still in flight"
    } else {
        "the copy had already completed"
    }
}

/// Bytes no fill or zeroed page looks like.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 31 + i / 251) % 251) as u8).collect()
}

fn compare(what: &str, got: &[u8], want: &[u8]) -> Result<(), Failure> {
    if got.len() != want.len() {
        return Err(format!("{}: {} bytes, expected {}", what, got.len(), want.len()).into());
    }
    let bad = got.iter().zip(want).filter(|(g, w)| g != w).count();
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(format!("{}: {} of {} bytes differ; the first at {}: {:#04x}, expected {:#04x}", what, bad,
                               want.len(), i, got[i], want[i])
            .into()),
    }
}
