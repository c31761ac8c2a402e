//! classify_service: a Tokio image-classification service on gaio, and a load generator
//! for it. The Rust twin of examples/python/async_service.py, speaking its protocol byte
//! for byte (little-endian):
//!
//!     request:  "GAIO" u32 id  u32 height  u32 width  u32 flags
//!               + height * width * 3 bytes of a u8 RGB frame (HWC)
//!               flags: 1 send the tensor back, 2 a mark (no frame: the server restarts
//!               its statistics, e.g. after a warm-up), 4 classify (see below)
//!     reply:    "GAIO" u32 id  u32 status (0 ok)  f64 checksum  u32 nbytes
//!               + nbytes: [i32 class  f32 score, with flag 4] then the f32 CHW
//!                 3x224x224 tensor if asked for, else nothing; on failure, the
//!                 error message
//!
//! Flag 4 is this server's only addition. The Python client never sets it, so it reads
//! every reply exactly as async_service.py's server writes it. A client that sets it gets
//! the model's top-1 class index and that output's value (a logit or a probability,
//! whatever the model's output is) as the payload's first 8 bytes, counted in nbytes: so
//! a server that ignores flag 4 (async_service.py's) is told apart by nbytes (0 or the
//! tensor's size, never 8 more) and the client never waits for bytes that won't come. A
//! server started without --model answers flag 4 with an error reply and goes on serving.
//!
//! Each request's frame is read from the socket straight into pinned memory (a
//! HostBuffer), uploaded on a stream from a pool (one per request in flight: waiting for
//! a free one is the backpressure), resized to 224x224 and normalised the torchvision way
//! into an f32 CHW tensor by Stream::preprocess, classified with --model by the slot's own
//! execution context, and copied back (every reply's checksum is the tensor's, as in the
//! Python server; its bytes are sent when asked for). Nothing of that waits: the
//! request's task then awaits the stream's fence, a gaio future woken through a
//! completion queue in Tokio's reactor, so no runtime worker ever waits for the device,
//! and a 2 ms heartbeat task on the server's runtime records how late it wakes.
//!
//! Roles: `both` (the default) runs the server on one runtime and the clients on another,
//! in this process; `server` serves until interrupted; `client` drives a server at --port
//! (this one, or async_service.py's). The clients send random frames of random sizes
//! (seeded; the seed printed) back to back, report requests/s and latency percentiles, and
//! check returned tensors against a reference computed here on the host in f64 (OpenCV's
//! INTER_LINEAR sampling with half-pixel centres, then normalisation), independent of
//! gaio; with flag 4, that every request for the same frame got the same class.
//!
//!     cd rust && cargo run --example classify_service -- --requests 200 --concurrency 8
//!     cargo run --example classify_service -- --role server --port 5555 --model model.onnx
//!     python3 examples/python/async_service.py --role client --port 5555
//!
//! Runs on the first GPU, else on the host backend (--device picks a gaio index). Exit
//! status: 0 when every request was served and every checked tensor matched, 1
//! otherwise, 2 for bad arguments.
use gaio::{Context, ContextOptions, DeviceBuffer, Dtype, Engine, EngineOptions, Exec, HostBuffer, Image, ImageLayout,
           Model, PreprocessParams, Stream, Tensor};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, SemaphorePermit};

const OUT_H: usize = 224;
const OUT_W: usize = 224;
const OUT_LEN: usize = 3 * OUT_H * OUT_W;
const OUT_BYTES: usize = OUT_LEN * 4;
/// The largest frame the server accepts.
const MAX_PIXELS: u64 = 4096 * 4096;

const MAGIC: [u8; 4] = *b"GAIO";
const WANT_TENSOR: u32 = 1;
const MARK: u32 = 2;
const CLASSIFY: u32 = 4;
const REQUEST_LEN: usize = 20;
const REPLY_LEN: usize = 24;
const CLASS_LEN: usize = 8;

#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("{0}")]
    Gaio(#[from] gaio::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Other(String),
}

fn fail<T>(message: String) -> Result<T, Failure> {
    Err(Failure::Other(message))
}

/// A poisoned lock only means another task panicked while holding it; statistics and
/// the slot list stay usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---- the protocol -------------------------------------------------------------------------

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

struct Request {
    magic: [u8; 4],
    id: u32,
    height: u32,
    width: u32,
    flags: u32,
}

impl Request {
    fn parse(b: &[u8; REQUEST_LEN]) -> Request {
        Request {
            magic: [b[0], b[1], b[2], b[3]],
            id: u32_at(b, 4),
            height: u32_at(b, 8),
            width: u32_at(b, 12),
            flags: u32_at(b, 16),
        }
    }

    fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[..4].copy_from_slice(&self.magic);
        for (i, v) in [self.id, self.height, self.width, self.flags].iter().enumerate() {
            b[4 + 4 * i..8 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// The frame's byte count, None when the header is not one the server takes.
    fn frame_bytes(&self) -> Option<usize> {
        let pixels = self.height as u64 * self.width as u64;
        if self.magic != MAGIC || pixels == 0 || pixels > MAX_PIXELS {
            return None;
        }
        usize::try_from(pixels * 3).ok()
    }
}

struct ReplyHead {
    magic: [u8; 4],
    id: u32,
    status: u32,
    checksum: f64,
    nbytes: u32,
}

impl ReplyHead {
    fn parse(b: &[u8; REPLY_LEN]) -> ReplyHead {
        let mut checksum = [0u8; 8];
        checksum.copy_from_slice(&b[12..20]);
        ReplyHead {
            magic: [b[0], b[1], b[2], b[3]],
            id: u32_at(b, 4),
            status: u32_at(b, 8),
            checksum: f64::from_le_bytes(checksum),
            nbytes: u32_at(b, 20),
        }
    }
}

/// A whole reply: header, then the payload (the class first when asked for).
fn reply(id: u32, status: u32, checksum: f64, class: Option<(i32, f32)>, payload: &[u8]) -> Vec<u8> {
    let nbytes = payload.len() + if class.is_some() { CLASS_LEN } else { 0 };
    let mut r = Vec::with_capacity(REPLY_LEN + nbytes);
    r.extend_from_slice(&MAGIC);
    r.extend_from_slice(&id.to_le_bytes());
    r.extend_from_slice(&status.to_le_bytes());
    r.extend_from_slice(&checksum.to_le_bytes());
    r.extend_from_slice(&(nbytes as u32).to_le_bytes());
    if let Some((class, score)) = class {
        r.extend_from_slice(&class.to_le_bytes());
        r.extend_from_slice(&score.to_le_bytes());
    }
    r.extend_from_slice(payload);
    r
}

fn error_reply(id: u32, message: &str) -> Vec<u8> {
    reply(id, 1, 0.0, None, message.as_bytes())
}

/// Nearest rank, in ms.
fn percentile_ms(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0 * v.len() as f64).ceil() as usize).max(1);
    v.get(rank - 1).map_or(0.0, |s| s * 1e3)
}

// ---- the server ---------------------------------------------------------------------------

struct ServerStats {
    served: usize,
    errors: usize,
    /// Summed over requests, from taking a slot to the fence.
    busy_s: f64,
    latencies: Vec<f64>,
    in_flight: usize,
    max_in_flight: usize,
    /// The heartbeat's.
    lateness: Vec<f64>,
    since: Instant,
    last: Instant,
}

impl ServerStats {
    fn new() -> ServerStats {
        let now = Instant::now();
        ServerStats { served: 0, errors: 0, busy_s: 0.0, latencies: Vec::new(), in_flight: 0, max_in_flight: 0,
                      lateness: Vec::new(), since: now, last: now }
    }
}

/// --model's engine, seen by one slot: an execution context of its own (runs of one are
/// ordered; the slots' streams run in parallel) and the output on the device and host.
struct Classifier {
    exec: Exec,
    shape: Vec<i64>,
    logits: DeviceBuffer<f32>,
    host: HostBuffer<f32>,
}

impl Classifier {
    fn new(ctx: &Context, engine: &Engine) -> Result<Classifier, Failure> {
        let shape = engine.outputs().into_iter().next().map(|o| o.shape).unwrap_or_default();
        let n = shape.iter().product::<i64>() as usize;
        Ok(Classifier { exec: engine.create_exec()?, shape, logits: DeviceBuffer::new(ctx, n)?,
                        host: HostBuffer::new(ctx, n)? })
    }

    /// Runs the model on `input` (f32 [1, 3, 224, 224]) and copies its output back.
    fn enqueue(&mut self, stream: &Stream, input: &DeviceBuffer<f32>) -> Result<(), Failure> {
        let x = Tensor::new(input, &[1, 3, OUT_H as i64, OUT_W as i64])?;
        let mut y = [Tensor::new(&self.logits, &self.shape)?];
        self.exec.run(stream, &[x], &mut y)?;
        stream.copy(&mut self.host, &self.logits)?;
        Ok(())
    }
}

/// One request in flight: its stream, the tensor on the device and its copy on the host.
struct Slot {
    stream: Stream,
    tensor: DeviceBuffer<f32>,
    out: HostBuffer<f32>,
    classifier: Option<Classifier>,
}

/// What the reply carries.
struct Served {
    checksum: f64,
    class: Option<(i32, f32)>,
    tensor: Vec<u8>,
}

impl Slot {
    fn new(ctx: &Context, engine: Option<&Engine>) -> Result<Slot, Failure> {
        Ok(Slot {
            stream: Stream::new(ctx, 0)?,
            tensor: DeviceBuffer::new(ctx, OUT_LEN)?,
            out: HostBuffer::new(ctx, OUT_LEN)?,
            classifier: engine.map(|e| Classifier::new(ctx, e)).transpose()?,
        })
    }

    /// Enqueues the whole request, then awaits its fence.
    async fn process(&mut self, frame: &HostBuffer<u8>, height: u32, width: u32, want_tensor: bool, classify: bool)
                     -> Result<Served, Failure> {
        self.enqueue(frame, height, width, classify)?;
        self.stream.fence()?.await?;
        let class = match (&mut self.classifier, classify) {
            (Some(c), true) => Some(top1(c.host.as_slice()?)),
            _ => None,
        };
        // The fence has passed: the host copy is there, as_slice does not wait.
        let out = self.out.as_slice()?;
        let checksum = out.iter().map(|&v| v as f64).sum();
        let tensor = if want_tensor { le_bytes(out) } else { Vec::new() };
        Ok(Served { checksum, class, tensor })
    }

    /// Upload, preprocess, classify, download, in stream order; nothing waits, so it is
    /// a plain function. The frame's device copy is dropped at once: the work holds it.
    fn enqueue(&mut self, frame: &HostBuffer<u8>, height: u32, width: u32, classify: bool) -> Result<(), Failure> {
        let mut src = DeviceBuffer::<u8>::new_async(&self.stream, frame.len())?;
        self.stream.copy(&mut src, frame)?;
        let from = Image::new(&src, ImageLayout::Hwc, 1, width as i32, height as i32, 3)?;
        let to = Image::new(&self.tensor, ImageLayout::Chw, 1, OUT_W as i32, OUT_H as i32, 3)?;
        self.stream.preprocess(&from, None, &to, &PreprocessParams::default())?;
        if classify {
            if let Some(c) = &mut self.classifier {
                c.enqueue(&self.stream, &self.tensor)?;
            }
        }
        self.stream.copy(&mut self.out, &self.tensor)?;
        Ok(())
    }
}

/// A copy in the wire's byte order: the slot's memory is reused once the reply is built.
fn le_bytes(v: &[f32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(v.len() * 4);
    for x in v {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b
}

/// The first largest output (NaN never wins) and its value.
fn top1(v: &[f32]) -> (i32, f32) {
    let mut best = (0usize, f32::NAN);
    for (i, &x) in v.iter().enumerate() {
        if best.1.is_nan() || x > best.1 {
            best = (i, x);
        }
    }
    (best.0 as i32, best.1)
}

struct Service {
    ctx: Context,
    has_model: bool,
    free: Semaphore,
    slots: Mutex<Vec<Slot>>,
    stats: Mutex<ServerStats>,
}

/// A slot taken from the pool, with its request counted in flight; both given back on
/// drop, also when the request's task is cancelled (a stream with work in flight may be
/// reused at once: its next request queues behind).
struct Lease<'a> {
    service: &'a Service,
    slot: Option<Slot>,
    _permit: SemaphorePermit<'a>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            lock(&self.service.slots).push(slot);
        }
        lock(&self.service.stats).in_flight -= 1;
    }
}

impl Service {
    fn new(ctx: Context, engine: Option<&Engine>, slots: usize) -> Result<Service, Failure> {
        let pool = (0..slots).map(|_| Slot::new(&ctx, engine)).collect::<Result<Vec<_>, _>>()?;
        Ok(Service { ctx, has_model: engine.is_some(), free: Semaphore::new(slots), slots: Mutex::new(pool),
                     stats: Mutex::new(ServerStats::new()) })
    }

    /// Waits for a free slot: the backpressure when every stream is busy.
    async fn lease(&self) -> Result<Lease<'_>, Failure> {
        let permit = self.free.acquire().await.map_err(|_| Failure::Other("the slot pool is closed".into()))?;
        let slot = match lock(&self.slots).pop() {
            Some(s) => s,
            None => return fail("a permit without a free slot".into()),
        };
        let mut st = lock(&self.stats);
        st.in_flight += 1;
        st.max_in_flight = st.max_in_flight.max(st.in_flight);
        Ok(Lease { service: self, slot: Some(slot), _permit: permit })
    }

    async fn run(&self, frame: &HostBuffer<u8>, req: &Request) -> Result<Served, Failure> {
        let classify = req.flags & CLASSIFY != 0;
        if classify && !self.has_model {
            return fail("flag 4 (classify) needs a model: start the server with --model FILE.onnx".into());
        }
        let mut lease = self.lease().await?;
        let t0 = Instant::now();
        let slot = match lease.slot.as_mut() {
            Some(s) => s,
            None => return fail("a lease without its slot".into()),
        };
        let served = slot.process(frame, req.height, req.width, req.flags & WANT_TENSOR != 0, classify).await?;
        let t1 = Instant::now();
        let mut st = lock(&self.stats);
        st.busy_s += (t1 - t0).as_secs_f64();
        st.latencies.push((t1 - t0).as_secs_f64());
        st.served += 1;
        st.last = t1;
        Ok(served)
    }

    fn count_error(&self) {
        lock(&self.stats).errors += 1;
    }

    /// Statistics from now on, keeping the heartbeat's record as the Python server does.
    fn restart_stats(&self) {
        let mut st = lock(&self.stats);
        let in_flight = st.in_flight;
        let mut lateness = std::mem::take(&mut st.lateness);
        lateness.clear();
        *st = ServerStats { in_flight, lateness, ..ServerStats::new() };
    }
}

/// One client: requests one after another (it waits for each reply before it sends the
/// next). A bad header gets an error reply and the connection closed; a failed request
/// an error reply, and the connection goes on.
async fn serve_connection(service: Arc<Service>, mut sock: TcpStream) {
    let _ = sock.set_nodelay(true);
    loop {
        let mut head = [0u8; REQUEST_LEN];
        if sock.read_exact(&mut head).await.is_err() {
            return; // the client left
        }
        let req = Request::parse(&head);
        if req.magic == MAGIC && req.flags & MARK != 0 {
            service.restart_stats();
            if sock.write_all(&reply(req.id, 0, 0.0, None, &[])).await.is_err() {
                return;
            }
            continue;
        }
        let bytes = match req.frame_bytes() {
            Some(n) => n,
            None => {
                let why = format!("bad request header (magic {}, frame {}x{})", req.magic.escape_ascii(), req.height,
                                  req.width);
                return refuse(&service, sock, req.id, &why).await;
            }
        };
        // Pinned memory the socket reads straight into, and the upload reads from.
        let mut frame = match HostBuffer::<u8>::new(&service.ctx, bytes) {
            Ok(f) => f,
            Err(e) => {
                let why = format!("no staging memory for a {}x{} frame: {}", req.height, req.width, e);
                return refuse(&service, sock, req.id, &why).await;
            }
        };
        let received = match frame.as_mut_slice() {
            Ok(dst) => sock.read_exact(dst).await.is_ok(),
            Err(_) => false,
        };
        if !received {
            return;
        }
        let answer = match service.run(&frame, &req).await {
            Ok(s) => reply(req.id, 0, s.checksum, s.class, &s.tensor),
            Err(e) => {
                service.count_error();
                error_reply(req.id, &e.to_string())
            }
        };
        if sock.write_all(&answer).await.is_err() {
            return;
        }
    }
}

async fn refuse(service: &Service, mut sock: TcpStream, id: u32, why: &str) {
    service.count_error();
    let _ = sock.write_all(&error_reply(id, why)).await;
}

async fn accept_loop(listener: TcpListener, service: Arc<Service>) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                tokio::spawn(serve_connection(Arc::clone(&service), sock));
            }
            Err(e) => {
                // Out of file descriptors, say: wait for connections to close, don't spin.
                eprintln!("classify_service: accept: {}", e);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Wakes every `period` and records how late: a runtime whose workers were blocked for
/// t shows t.
async fn heartbeat(period: Duration, service: Arc<Service>) {
    let mut due = Instant::now() + period;
    loop {
        tokio::time::sleep_until(due.into()).await;
        let now = Instant::now();
        lock(&service.stats).lateness.push(now.saturating_duration_since(due).as_secs_f64());
        due = now + period;
    }
}

/// --model's engine for ctx, checked to take one f32 [1, 3, 224, 224] and give one f32 output.
fn build_engine(path: &Path, ctx: &Context) -> Result<Engine, Failure> {
    let t0 = Instant::now();
    let model = Model::load(path)?;
    // batch 1 said outright: this libgaio refuses EngineOptions' default 0 for a symbolic batch.
    let engine = Engine::build(&model, ctx, &EngineOptions { batch: 1, ..Default::default() })?;
    let (ins, outs) = (engine.inputs(), engine.outputs());
    let want = [1, 3, OUT_H as i64, OUT_W as i64];
    if ins.len() != 1 || ins[0].shape != want || ins[0].dtype != Some(Dtype::F32) {
        return fail(format!("{}: the inputs are {:?}; the service feeds one f32 {:?}", path.display(), ins, want));
    }
    if outs.len() != 1 || outs[0].dtype != Some(Dtype::F32) || outs[0].shape.iter().any(|&d| d < 1) {
        return fail(format!("{}: the outputs are {:?}; the service reads one f32 of a fixed shape", path.display(),
                            outs));
    }
    println!("classify_service: model {}: {} {:?} -> {} {:?}; engine built in {:.2} s", path.display(), ins[0].name,
             ins[0].shape, outs[0].name, outs[0].shape, t0.elapsed().as_secs_f64());
    Ok(engine)
}

/// The context, engine and slot pool; the listener bound on `runtime`.
fn start_server(args: &Args, runtime: &tokio::runtime::Runtime) -> Result<(Arc<Service>, TcpListener), Failure> {
    // Each request allocates its frame's device copy from the stream-ordered pool: keep
    // enough freed memory cached for every stream's largest frame (as async_service.py).
    let options = ContextOptions { pool_release_threshold: (256usize << 20).max(args.concurrency * (12 << 20)),
                                   ..ContextOptions::default() };
    let index = match args.device {
        Some(i) => i,
        None => gaio::devices()?.into_iter().find(|d| d.is_gpu).map_or(0, |d| d.index),
    };
    let ctx = Context::with_options(index, &options)?;
    let props = gaio::device_props(ctx.device()?)?;
    let engine = match &args.model {
        Some(p) => Some(build_engine(p, &ctx)?),
        None => None,
    };
    let service = Arc::new(Service::new(ctx, engine.as_ref(), args.concurrency)?);
    let listener = runtime.block_on(TcpListener::bind(("127.0.0.1", args.port)))?;
    println!("classify_service: serving on 127.0.0.1:{} on gaio device {} ({}); {} streams; u8 frames -> f32 CHW \
              3x{}x{}{}",
             listener.local_addr()?.port(), props.index, props.name, args.concurrency, OUT_H, OUT_W,
             if engine.is_some() { " -> top-1 class" } else { "" });
    runtime.spawn(heartbeat(Duration::from_secs_f64(args.heartbeat_ms / 1e3), Arc::clone(&service)));
    Ok((service, listener))
}

// ---- the clients --------------------------------------------------------------------------

/// SplitMix64: seeded frames, the same for a seed everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// 1..=n
    fn upto(&mut self, n: u64) -> u32 {
        (1 + self.next() % n) as u32
    }
}

struct Frame {
    height: u32,
    width: u32,
    data: Vec<u8>,
}

const FRAMES: usize = 8;

/// FRAMES random frames: the first no larger than the output (an enlarging resize), the
/// rest anything up to 1920x1080.
fn make_frames(seed: u64) -> Vec<Frame> {
    let mut rng = Rng(seed);
    (0..FRAMES)
        .map(|i| {
            let (height, width) = if i == 0 { (rng.upto(224), rng.upto(224)) } else { (rng.upto(1080), rng.upto(1920)) };
            let mut data = vec![0u8; height as usize * width as usize * 3];
            for chunk in data.chunks_mut(8) {
                let r = rng.next().to_le_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
            Frame { height, width, data }
        })
        .collect()
}

#[derive(Default)]
struct ClientStats {
    latencies: Vec<f64>,
    /// (request, tensor) to check against the reference.
    checked: Vec<(usize, Vec<f32>)>,
    /// (request, class, score)
    classes: Vec<(usize, i32, f32)>,
    errors: Vec<String>,
    sent_bytes: u64,
}

impl ClientStats {
    fn merge(&mut self, o: ClientStats) {
        self.latencies.extend(o.latencies);
        self.checked.extend(o.checked);
        self.classes.extend(o.classes);
        self.errors.extend(o.errors);
        self.sent_bytes += o.sent_bytes;
    }
}

/// What the clients share: the frames, the next request id and how many to send.
struct Load {
    frames: Arc<Vec<Frame>>,
    next: AtomicUsize,
    total: usize,
    verify_every: usize,
    classify: bool,
}

struct Reply {
    head: ReplyHead,
    class: Option<(i32, f32)>,
    /// The tensor's bytes, if sent.
    tensor: Vec<u8>,
}

/// Sends one request and reads its reply.
async fn exchange(sock: &mut TcpStream, req: &Request, frame: &[u8]) -> Result<Reply, Failure> {
    sock.write_all(&req.encode()).await?;
    sock.write_all(frame).await?;
    let mut head = [0u8; REPLY_LEN];
    sock.read_exact(&mut head).await?;
    let head = ReplyHead::parse(&head);
    if head.magic != MAGIC || head.nbytes as usize > CLASS_LEN + OUT_BYTES {
        return fail(format!("request {}: a bad reply header", req.id));
    }
    let mut body = vec![0u8; head.nbytes as usize];
    sock.read_exact(&mut body).await?;
    if head.status != 0 || head.id != req.id {
        return fail(format!("request {}: status {}, id {}: {}", req.id, head.status, head.id,
                            String::from_utf8_lossy(&body)));
    }
    if req.flags & CLASSIFY == 0 {
        return Ok(Reply { head, class: None, tensor: body });
    }
    // The class, then the tensor if asked for: a reply without them is a server that
    // ignores flag 4.
    if body.len() != CLASS_LEN && body.len() != CLASS_LEN + OUT_BYTES {
        return fail(format!("request {}: {} bytes of payload, no class: does the server know flag 4 (classify)?",
                            req.id, body.len()));
    }
    let c = &body[..CLASS_LEN];
    let class = (i32::from_le_bytes([c[0], c[1], c[2], c[3]]), f32::from_le_bytes([c[4], c[5], c[6], c[7]]));
    Ok(Reply { head, class: Some(class), tensor: body.split_off(CLASS_LEN) })
}

/// One connection sending requests back to back until `load.total` have been taken,
/// then a mark if asked for.
async fn client(port: u16, load: Arc<Load>, mark: bool) -> ClientStats {
    let mut stats = ClientStats::default();
    if let Err(e) = client_requests(port, &load, mark, &mut stats).await {
        stats.errors.push(format!("client: {}", e));
    }
    stats
}

async fn client_requests(port: u16, load: &Load, mark: bool, stats: &mut ClientStats) -> Result<(), Failure> {
    let mut sock = TcpStream::connect(("127.0.0.1", port)).await?;
    sock.set_nodelay(true)?; // header and frame go as two writes
    loop {
        let id = load.next.fetch_add(1, Ordering::Relaxed);
        if id >= load.total {
            if mark {
                exchange(&mut sock, &Request { magic: MAGIC, id: load.total as u32, height: 0, width: 0, flags: MARK },
                         &[])
                    .await?;
            }
            return Ok(());
        }
        let frame = &load.frames[id % load.frames.len()];
        let want = load.verify_every > 0 && (id % load.verify_every == 0 || id == load.total - 1);
        let flags = if want { WANT_TENSOR } else { 0 } | if load.classify { CLASSIFY } else { 0 };
        let req = Request { magic: MAGIC, id: id as u32, height: frame.height, width: frame.width, flags };
        let t0 = Instant::now();
        let r = exchange(&mut sock, &req, &frame.data).await?;
        stats.latencies.push(t0.elapsed().as_secs_f64());
        stats.sent_bytes += frame.data.len() as u64;
        if let Some((class, score)) = r.class {
            stats.classes.push((id, class, score));
        }
        if want {
            check_payload(id, &r, stats);
        }
    }
}

/// The tensor sent, kept for the reference check, and its checksum against the header's.
fn check_payload(id: usize, r: &Reply, stats: &mut ClientStats) {
    if r.tensor.len() != OUT_BYTES {
        stats.errors.push(format!("request {}: {} bytes of tensor, expected {}", id, r.tensor.len(), OUT_BYTES));
        return;
    }
    let tensor: Vec<f32> = r.tensor.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let sum: f64 = tensor.iter().map(|&v| v as f64).sum();
    // The Python server sums in another order (numpy's pairwise sum).
    if (sum - r.head.checksum).abs() > 1e-9 * sum.abs().max(1.0) {
        stats.errors.push(format!("request {}: the checksum {} does not match the tensor sent ({})", id,
                                  r.head.checksum, sum));
    }
    stats.checked.push((id, tensor));
}

/// One axis of OpenCV's INTER_LINEAR: output d samples (d + 0.5) * scale - 0.5, rounded
/// to f32 as OpenCV does, the border replicated. (source index, next index, weight of next)
fn taps(src: u32, dst: usize) -> Vec<(usize, usize, f64)> {
    let scale = 1.0 / (dst as f64 / src as f64);
    let last = src as i64 - 1;
    (0..dst)
        .map(|d| {
            let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
            let s = f.floor() as i64;
            let (s, frac) = if s < 0 {
                (0, 0.0)
            } else if s >= last {
                (last, 0.0)
            } else {
                (s, (f - s as f32) as f64)
            };
            (s as usize, (s + 1).min(last) as usize, frac)
        })
        .collect()
}

const MEAN: [f64; 3] = [0.485, 0.456, 0.406]; // torchvision's ImageNet normalisation
const STD: [f64; 3] = [0.229, 0.224, 0.225];

/// The frame resized to 224x224 (bilinear, OpenCV's sampling), then (v / 255 - mean) /
/// std, as CHW: a direct computation in f64, sharing nothing with gaio.
fn reference(frame: &Frame) -> Vec<f64> {
    let ys = taps(frame.height, OUT_H);
    let xs = taps(frame.width, OUT_W);
    let w = frame.width as usize;
    let px = |y: usize, x: usize, c: usize| frame.data[(y * w + x) * 3 + c] as f64;
    let mut out = vec![0.0; OUT_LEN];
    for (y, &(y0, y1, fy)) in ys.iter().enumerate() {
        for (x, &(x0, x1, fx)) in xs.iter().enumerate() {
            for c in 0..3 {
                let top = px(y0, x0, c) * (1.0 - fx) + px(y0, x1, c) * fx;
                let bottom = px(y1, x0, c) * (1.0 - fx) + px(y1, x1, c) * fx;
                let v = top * (1.0 - fy) + bottom * fy;
                out[(c * OUT_H + y) * OUT_W + x] = (v / 255.0 - MEAN[c]) / STD[c];
            }
        }
    }
    out
}

/// The checked tensors against the reference: (mismatching tensors, max |diff|).
fn verify(frames: &[Frame], checked: &[(usize, Vec<f32>)], errors: &mut Vec<String>) -> (usize, f64) {
    let (mut mismatches, mut worst) = (0, 0.0f64);
    for (id, got) in checked {
        let want = reference(&frames[id % frames.len()]);
        let mut bad = 0;
        let mut first = None;
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let diff = (g as f64 - w).abs();
            worst = worst.max(diff);
            // Float sums in another order: ~1e-6. One u8 step of the input moves an
            // output by 1 / 255 / std ~ 0.017, far above the tolerance.
            if diff.is_nan() || diff > 1e-4 + 1e-4 * w.abs() {
                bad += 1;
                first.get_or_insert(i);
            }
        }
        if let Some(i) = first {
            mismatches += 1;
            let (c, y, x) = (i / (OUT_H * OUT_W), i / OUT_W % OUT_H, i % OUT_W);
            errors.push(format!("request {}: {} values differ from the reference; first [{}][{}][{}] = {:.7}, \
                                 expected {:.7}",
                                id, bad, c, y, x, got[i], want[i]));
        }
    }
    (mismatches, worst)
}

/// Every request for the same frame must get the same class; a line on what they got.
fn check_classes(frames: usize, classes: &[(usize, i32, f32)], errors: &mut Vec<String>) -> String {
    let mut per_frame: Vec<Option<(i32, f32)>> = vec![None; frames];
    for &(id, class, score) in classes {
        match per_frame[id % frames] {
            None => per_frame[id % frames] = Some((class, score)),
            Some((c, _)) if c != class => {
                errors.push(format!("request {}: class {}, but earlier requests for its frame got {}", id, class, c))
            }
            Some(_) => {}
        }
        if class < 0 || !score.is_finite() {
            errors.push(format!("request {}: class {} with score {}", id, class, score));
        }
    }
    let seen: Vec<String> =
        per_frame.iter().flatten().map(|(c, s)| format!("{} ({:.3})", c, s)).collect();
    format!("{} requests classified; top-1 class of each frame: {}", classes.len(), seen.join(", "))
}

struct ClientReport {
    ok: bool,
    requests: usize,
}

/// Drives the server at `port`: a warm-up and a mark, then the measured run; prints the
/// clients' lines.
async fn clients_main(port: u16, args: &Args) -> ClientReport {
    let frames = Arc::new(make_frames(args.seed));
    let sizes: Vec<String> = frames.iter().map(|f| format!("{}x{}", f.height, f.width)).collect();
    println!("classify_service: seed {}: {} random frames (HxW) {}", args.seed, frames.len(), sizes.join(", "));
    // Requests between two checked ones (0: none checked).
    let verify_every = (args.requests + args.verify.max(1) - 1).checked_div(args.verify).unwrap_or(0);
    let classify = args.classify;

    // One unmeasured request per frame (the first use of the server's pools and
    // kernels), then a mark: the server counts from there.
    let warm =
        Arc::new(Load { frames: Arc::clone(&frames), next: AtomicUsize::new(0), total: FRAMES, verify_every: 0, classify });
    let mut stats = client(port, warm, true).await;
    let load = Arc::new(Load { frames, next: AtomicUsize::new(0), total: args.requests, verify_every, classify });
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..args.concurrency).map(|_| tokio::spawn(client(port, Arc::clone(&load), false))).collect();
    let mut run = ClientStats::default();
    for t in tasks {
        match t.await {
            Ok(s) => run.merge(s),
            Err(e) => run.errors.push(format!("a client task failed: {}", e)),
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    stats.errors.append(&mut run.errors);
    let mut errors = stats.errors;
    if run.latencies.len() != args.requests {
        errors.push(format!("{} of {} requests answered", run.latencies.len(), args.requests));
    }
    let (mismatches, worst) = verify(&load.frames, &run.checked, &mut errors);
    let classes = if classify { Some(check_classes(load.frames.len(), &run.classes, &mut errors)) } else { None };

    let requests_per_s = run.latencies.len() as f64 / wall.max(1e-9);
    println!("classify_service: {} requests over {} connections: {:.1} requests/s; latency p50 {:.2} ms, p99 {:.2} \
              ms (client round trip, {:.0} MiB of frames)",
             run.latencies.len(), args.concurrency, requests_per_s, percentile_ms(&run.latencies, 50.0),
             percentile_ms(&run.latencies, 99.0), run.sent_bytes as f64 / (1u64 << 20) as f64);
    println!("classify_service: {} tensors checked against a direct computation (Rust, f64): {} mismatches (max \
              |diff| {:.3e})",
             run.checked.len(), mismatches, worst);
    if let Some(line) = classes {
        println!("classify_service: {}", line);
    }
    for e in &errors {
        eprintln!("classify_service (clients): {}", e);
    }
    ClientReport { ok: errors.is_empty(), requests: run.latencies.len() }
}

// ---- main ---------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Both,
    Server,
    Client,
}

struct Args {
    role: Role,
    requests: usize,
    concurrency: usize,
    verify: usize,
    port: u16,
    seed: u64,
    device: Option<i32>,
    model: Option<PathBuf>,
    classify: bool,
    heartbeat_ms: f64,
    timeout_s: f64,
    max_late_ms: f64,
}

const USAGE: &str = "usage: classify_service [--role both|server|client] [--requests N] [--concurrency N] \
[--verify N] [--port P] [--seed S] [--device auto|INDEX] [--model FILE.onnx] [--classify] [--heartbeat-ms MS] \
[--timeout S] [--max-late-ms MS]

  --role          both (default): the server and the clients in this process, on two runtimes;
                  server: serve until interrupted; client: drive the server at --port
  --requests      requests to send (default 200)
  --concurrency   client connections, and streams in the server's pool (default 8)
  --verify        tensors checked against the host reference (default 8)
  --port          TCP port on 127.0.0.1 (default: any free one; client: required)
  --seed          seed of the random frames (default 1)
  --device        auto (the first GPU, else the host) or a gaio device index (0: the host)
  --model         an ONNX classifier taking f32 [N, 3, 224, 224]: the server classifies
  --classify      (client) ask for the class (flag 4); implied by --model with --role both
  --heartbeat-ms  the server runtime's heartbeat period (default 2)
  --timeout       fail when the clients take longer, in s (default 300)
  --max-late-ms   fail when the heartbeat is ever this late (default 1000: generous, for CI hosts)";

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("{}: not a valid value: {:?}", key, value))
}

/// Ok(None) for --help.
fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args { role: Role::Both, requests: 200, concurrency: 8, verify: 8, port: 0, seed: 1, device: None,
                       model: None, classify: false, heartbeat_ms: 2.0, timeout_s: 300.0, max_late_ms: 1000.0 };
    while let Some(arg) = argv.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (arg, None),
        };
        match key.as_str() {
            "-h" | "--help" => return Ok(None),
            "--classify" => {
                a.classify = true;
                continue;
            }
            "--role" | "--requests" | "--concurrency" | "--verify" | "--port" | "--seed" | "--device" | "--model"
            | "--heartbeat-ms" | "--timeout" | "--max-late-ms" => {}
            _ => return Err(format!("unknown argument {:?}", key)),
        }
        let value = match inline.or_else(|| argv.next()) {
            Some(v) => v,
            None => return Err(format!("{} needs a value", key)),
        };
        match key.as_str() {
            "--role" => {
                a.role = match value.as_str() {
                    "both" => Role::Both,
                    "server" => Role::Server,
                    "client" => Role::Client,
                    _ => return Err(format!("--role: both, server or client, not {:?}", value)),
                }
            }
            "--requests" => a.requests = number(&key, &value)?,
            "--concurrency" => a.concurrency = number(&key, &value)?,
            "--verify" => a.verify = number(&key, &value)?,
            "--port" => a.port = number(&key, &value)?,
            "--seed" => a.seed = number(&key, &value)?,
            "--device" => a.device = if value == "auto" { None } else { Some(number(&key, &value)?) },
            "--model" => a.model = Some(PathBuf::from(value)),
            "--heartbeat-ms" => a.heartbeat_ms = number(&key, &value)?,
            "--timeout" => a.timeout_s = number(&key, &value)?,
            _ => a.max_late_ms = number(&key, &value)?,
        }
    }
    if a.requests < 1 || a.concurrency < 1 || a.requests > u32::MAX as usize {
        return Err("--requests and --concurrency must be >= 1".into());
    }
    let sane = |v: f64| v > 0.0 && v < 1e9;
    if !(sane(a.heartbeat_ms) && sane(a.timeout_s)) {
        return Err("--heartbeat-ms and --timeout must be positive".into());
    }
    if a.role == Role::Client && a.port == 0 {
        return Err("--role client needs the server's --port".into());
    }
    if a.role == Role::Client && a.model.is_some() {
        return Err("--model is the server's; a client asks for classes with --classify".into());
    }
    if a.role == Role::Both && a.model.is_some() {
        a.classify = true;
    }
    a.concurrency = a.concurrency.min(a.requests);
    Ok(Some(a))
}

fn runtime(name: &str) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).thread_name(name).enable_all().build()
}

fn run_server(args: &Args) -> Result<bool, Failure> {
    let rt = runtime("server")?;
    let (service, listener) = start_server(args, &rt)?;
    rt.block_on(accept_loop(listener, service));
    Ok(true)
}

fn run_client(args: &Args) -> Result<bool, Failure> {
    let rt = runtime("clients")?;
    Ok(matches!(drive(&rt, args.port, args), Some(ClientReport { ok: true, .. })))
}

/// The clients against the server at `port`, within --timeout (None past it).
fn drive(rt: &tokio::runtime::Runtime, port: u16, args: &Args) -> Option<ClientReport> {
    let limit = Duration::from_secs_f64(args.timeout_s);
    let report = rt.block_on(async { tokio::time::timeout(limit, clients_main(port, args)).await }).ok();
    if report.is_none() {
        eprintln!("classify_service: the clients did not finish within {} s", args.timeout_s);
    }
    report
}

/// The server on one runtime, the clients on another; then both sides' figures.
fn run_both(args: &Args) -> Result<bool, Failure> {
    let server_rt = runtime("server")?;
    let (service, listener) = start_server(args, &server_rt)?;
    let port = listener.local_addr()?.port();
    server_rt.spawn(accept_loop(listener, Arc::clone(&service)));

    let client_rt = runtime("clients")?;
    let report = match drive(&client_rt, port, args) {
        Some(r) => r,
        None => return Ok(false),
    };
    let server_ok = server_report(args, &lock(&service.stats), &report);
    server_rt.shutdown_timeout(Duration::from_secs(1));
    Ok(report.ok && server_ok)
}

/// The server's lines; whether its side passed.
fn server_report(args: &Args, ss: &ServerStats, report: &ClientReport) -> bool {
    let wall = (ss.last - ss.since).as_secs_f64().max(1e-9);
    println!("classify_service: server: upload to fence p50 {:.2} ms, p99 {:.2} ms; requests on the device at once: \
              at most {}, {:.1} on average (a runtime that waited for each would show 1)",
             percentile_ms(&ss.latencies, 50.0), percentile_ms(&ss.latencies, 99.0), ss.max_in_flight,
             ss.busy_s / wall);
    let late = &ss.lateness;
    let worst = late.iter().cloned().fold(0.0, f64::max);
    println!("classify_service: the server runtime's {} ms heartbeat woke {} times, at worst {:.2} ms late (p50 \
              {:.2} ms, p99 {:.2} ms)",
             args.heartbeat_ms, late.len(), worst * 1e3, percentile_ms(late, 50.0), percentile_ms(late, 99.0));
    let mut ok = true;
    if ss.served != report.requests || ss.errors > 0 {
        eprintln!("classify_service: the server served {} of {} ({} errors)", ss.served, report.requests, ss.errors);
        ok = false;
    }
    if args.concurrency >= 2 && ss.max_in_flight < 2 {
        eprintln!("classify_service: never two requests in flight at once: something blocked the runtime");
        ok = false;
    }
    if worst * 1e3 > args.max_late_ms {
        eprintln!("classify_service: the server runtime was blocked for more than {} ms", args.max_late_ms);
        ok = false;
    }
    ok
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("classify_service: {}\n{}", e, USAGE);
            return ExitCode::from(2);
        }
    };
    let result = match args.role {
        Role::Both => run_both(&args),
        Role::Server => run_server(&args),
        Role::Client => run_client(&args),
    };
    match result {
        Ok(true) => {
            println!("classify_service: OK");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("classify_service: FAILED");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("classify_service: {}", e);
            println!("classify_service: FAILED");
            ExitCode::FAILURE
        }
    }
}
