//! A tiny ONNX writer for the tests (protobuf by hand: varints and length-delimited
//! fields), so that they need no model files: y = Relu(x W + b), x [N, K] with a
//! symbolic N, W [K, M] and b [M] initializers, opset 13.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, ((field << 3) | wire) as u64);
}

fn int(out: &mut Vec<u8>, field: u32, v: i64) {
    key(out, field, 0);
    varint(out, v as u64);
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn value_info(name: &str, dims: &[Result<i64, &str>]) -> Vec<u8> {
    let mut shape = Vec::new();
    for d in dims {
        let mut dim = Vec::new();
        match d {
            Ok(v) => int(&mut dim, 1, *v),
            Err(p) => bytes(&mut dim, 2, p.as_bytes()),
        }
        bytes(&mut shape, 1, &dim);
    }
    let mut tensor = Vec::new();
    int(&mut tensor, 1, 1); // FLOAT
    bytes(&mut tensor, 2, &shape);
    let mut ty = Vec::new();
    bytes(&mut ty, 1, &tensor);
    let mut vi = Vec::new();
    bytes(&mut vi, 1, name.as_bytes());
    bytes(&mut vi, 2, &ty);
    vi
}

fn initializer(name: &str, dims: &[i64], data: &[f32]) -> Vec<u8> {
    let mut t = Vec::new();
    for &d in dims {
        int(&mut t, 1, d);
    }
    int(&mut t, 2, 1); // FLOAT
    bytes(&mut t, 8, name.as_bytes());
    let raw: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    bytes(&mut t, 9, &raw);
    t
}

fn node(inputs: &[&str], output: &str, op: &str) -> Vec<u8> {
    let mut n = Vec::new();
    for i in inputs {
        bytes(&mut n, 1, i.as_bytes());
    }
    bytes(&mut n, 2, output.as_bytes());
    bytes(&mut n, 4, op.as_bytes());
    n
}

/// The ONNX bytes of y = Relu(x W + b).
pub fn dense_relu(k: usize, m: usize, w: &[f32], b: &[f32]) -> Vec<u8> {
    let mut g = Vec::new();
    bytes(&mut g, 1, &node(&["x", "W"], "xw", "MatMul"));
    bytes(&mut g, 1, &node(&["xw", "b"], "z", "Add"));
    bytes(&mut g, 1, &node(&["z"], "y", "Relu"));
    bytes(&mut g, 2, b"dense_relu");
    bytes(&mut g, 5, &initializer("W", &[k as i64, m as i64], w));
    bytes(&mut g, 5, &initializer("b", &[m as i64], b));
    bytes(&mut g, 11, &value_info("x", &[Err("N"), Ok(k as i64)]));
    bytes(&mut g, 12, &value_info("y", &[Err("N"), Ok(m as i64)]));
    let mut opset = Vec::new();
    bytes(&mut opset, 1, b"");
    int(&mut opset, 2, 13);
    let mut model = Vec::new();
    int(&mut model, 1, 7);
    bytes(&mut model, 2, b"gaio-rust-tests");
    bytes(&mut model, 7, &g);
    bytes(&mut model, 8, &opset);
    model
}

/// What the model computes, in f64 on the host.
pub fn dense_relu_ref(x: &[f32], n: usize, k: usize, m: usize, w: &[f32], b: &[f32]) -> Vec<f32> {
    let mut y = vec![0f32; n * m];
    for i in 0..n {
        for j in 0..m {
            let mut acc = b[j] as f64;
            for t in 0..k {
                acc += x[i * k + t] as f64 * w[t * m + j] as f64;
            }
            y[i * m + j] = acc.max(0.0) as f32;
        }
    }
    y
}
