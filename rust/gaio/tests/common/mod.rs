//! What the integration tests share: seeded random data and the contexts to run on.
#![allow(dead_code)]
use gaio::Context;

pub mod onnx;

/// A seed from the clock, printed so that a failure can be replayed.
pub fn seed() -> u64 {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    println!("seed {}", s);
    s
}

/// xorshift64: n values.
pub fn random(seed: &mut u64, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed as u32
        })
        .collect()
}

/// The host's context, and the first GPU's where there is one (else the test says
/// that part is SKIPPED).
pub fn contexts(test: &str) -> Vec<Context> {
    let mut v = vec![Context::new(0).expect("the host context")];
    match gaio::devices().unwrap().into_iter().find(|d| d.is_gpu) {
        Some(d) => v.push(Context::new(d.index).expect("the GPU context")),
        None => println!("{}: GPU part SKIPPED: no CUDA device", test),
    }
    v
}
