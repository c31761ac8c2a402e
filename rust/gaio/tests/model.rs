//! The model stage: an ONNX graph written by the test (tests/common/onnx.rs), built into
//! an engine on the host and the first GPU (SKIPPED without one), run through execution
//! contexts, awaited and waited on, against the same computation in f64 on the host.
mod common;
use common::{contexts, onnx, random, seed};
use gaio::{DeviceBuffer, Engine, EngineOptions, HostBuffer, Model, Precision, Status, Stream, Tensor};

/// The model, or None (the test SKIPPED) where this libgaio was built without ONNX.
fn load(bytes: &[u8], test: &str) -> Option<Model> {
    match Model::from_bytes(bytes) {
        Err(e) if e.status == Status::NotSupported => {
            println!("{}: SKIPPED: this libgaio has no ONNX loader ({})", test, e);
            None
        }
        r => Some(r.unwrap()),
    }
}

fn floats(seed: &mut u64, n: usize) -> Vec<f32> {
    random(seed, n).into_iter().map(|v| (v % 2001) as f32 / 1000.0 - 1.0).collect()
}

fn close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {}: got {}, want {}", i, g, w);
    }
}

#[test]
fn a_model_runs_like_its_definition() {
    let mut s = seed();
    let (n, k, m) = (5usize, 16usize, 7usize);
    let w = floats(&mut s, k * m);
    let b = floats(&mut s, m);
    let model = match load(&onnx::dense_relu(k, m, &w, &b), "a_model_runs_like_its_definition") {
        Some(m) => m,
        None => return,
    };
    let ins = model.inputs();
    assert_eq!(ins.len(), 1);
    assert_eq!((ins[0].name.as_str(), ins[0].shape.as_slice()), ("x", &[-1i64, k as i64][..]));
    assert_eq!(model.outputs()[0].shape, vec![-1, m as i64]);
    for ctx in contexts("a_model_runs_like_its_definition") {
        // f32 everywhere, so one tolerance: the model's own precision.
        let opts = EngineOptions { batch: n as i64, precision: Precision::Model, ..Default::default() };
        let engine = Engine::build(&model, &ctx, &opts).unwrap();
        assert_eq!(engine.inputs()[0].shape, vec![n as i64, k as i64]);
        let exec = engine.create_exec().unwrap();
        let stream = Stream::new(&ctx, 0).unwrap();
        for _ in 0..3 {
            let x = floats(&mut s, n * k);
            let up = HostBuffer::from_slice(&ctx, &x).unwrap();
            let mut xd = DeviceBuffer::<f32>::new(&ctx, n * k).unwrap();
            let yd = DeviceBuffer::<f32>::new(&ctx, n * m).unwrap();
            let mut down = HostBuffer::<f32>::new(&ctx, n * m).unwrap();
            stream.copy(&mut xd, &up).unwrap();
            {
                let xt = Tensor::new(&xd, &[n as i64, k as i64]).unwrap();
                let mut yt = [Tensor::new(&yd, &[n as i64, m as i64]).unwrap()];
                exec.run(&stream, &[xt], &mut yt).unwrap();
            }
            stream.copy(&mut down, &yd).unwrap();
            close(down.as_slice().unwrap(), &onnx::dense_relu_ref(&x, n, k, m, &w, &b), 1e-5);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_build_and_run_under_tokio() {
    let mut s = seed();
    let (n, k, m) = (3usize, 8usize, 4usize);
    let w = floats(&mut s, k * m);
    let b = floats(&mut s, m);
    let model = match load(&onnx::dense_relu(k, m, &w, &b), "engines_build_and_run_under_tokio") {
        Some(m) => m,
        None => return,
    };
    let ctx = gaio::Context::new(0).unwrap();
    let opts = EngineOptions { batch: n as i64, ..Default::default() };
    let (engine, built) = Engine::build_async(&model, &ctx, &opts).unwrap();
    built.await.unwrap();
    // Saved and loaded: the same results.
    let path = std::env::temp_dir().join(format!("gaio-rust-test-{}.engine", std::process::id()));
    engine.save(&path).unwrap();
    let loaded = Engine::load(&path, &ctx).unwrap();
    std::fs::remove_file(&path).ok();
    let stream = Stream::new(&ctx, 0).unwrap();
    let x = floats(&mut s, n * k);
    let up = HostBuffer::from_slice(&ctx, &x).unwrap();
    let want = onnx::dense_relu_ref(&x, n, k, m, &w, &b);
    for e in [&engine, &loaded] {
        let exec = e.create_exec().unwrap();
        let mut xd = DeviceBuffer::<f32>::new(&ctx, n * k).unwrap();
        let yd = DeviceBuffer::<f32>::new(&ctx, n * m).unwrap();
        let mut down = HostBuffer::<f32>::new(&ctx, n * m).unwrap();
        stream.copy(&mut xd, &up).unwrap();
        let xt = Tensor::new(&xd, &[n as i64, k as i64]).unwrap();
        let mut yt = [Tensor::new(&yd, &[n as i64, m as i64]).unwrap()];
        exec.run(&stream, &[xt], &mut yt).unwrap().await.unwrap();
        stream.copy(&mut down, &yd).unwrap().await.unwrap();
        close(down.as_slice().unwrap(), &want, 1e-5);
    }
}

#[test]
fn bad_models_and_tensors_are_errors() {
    let w = vec![0.5f32; 8 * 4];
    let b = vec![0f32; 4];
    let model = match load(&onnx::dense_relu(8, 4, &w, &b), "bad_models_and_tensors_are_errors") {
        Some(m) => m,
        None => return,
    };
    let e = Model::from_bytes(b"not an onnx file").err().expect("refused");
    assert!(!e.message.is_empty(), "{}", e);
    let e = Model::load("/nonexistent/model.onnx").err().expect("refused");
    assert!(e.message.contains("/nonexistent/model.onnx"), "{}", e);
    let ctx = gaio::Context::new(0).unwrap();
    let buf = DeviceBuffer::<f32>::new(&ctx, 12).unwrap();
    let e = Tensor::new(&buf, &[5, 3]).err().expect("12 elements are not 5 x 3");
    assert_eq!(e.status, Status::InvalidArg);
    let odd = DeviceBuffer::<u32>::new(&ctx, 4).unwrap();
    assert!(Tensor::new(&odd, &[4]).err().expect("no u32 tensors").message.contains("u32"));
    // A run with the wrong shape: gaio's message, nothing enqueued.
    let engine = Engine::build(&model, &ctx, &EngineOptions { batch: 3, ..Default::default() }).unwrap();
    let exec = engine.create_exec().unwrap();
    let stream = Stream::new(&ctx, 0).unwrap();
    let x = DeviceBuffer::<f32>::new(&ctx, 2 * 8).unwrap();
    let y = DeviceBuffer::<f32>::new(&ctx, 3 * 4).unwrap();
    let e = exec
        .run(&stream, &[Tensor::new(&x, &[2, 8]).unwrap()], &mut [Tensor::new(&y, &[3, 4]).unwrap()])
        .err()
        .expect("batch 2 into an engine of batch 3");
    assert_eq!(e.status, Status::InvalidArg, "{}", e);
    assert!(e.message.contains("gaio_model_run"), "{}", e);
}
