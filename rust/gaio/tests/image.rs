//! Image ops on the host backend and the first GPU (SKIPPED without one), against direct
//! computations: 2x downscales (nearest: every other pixel; linear with pixel-centre
//! alignment: the 2x2 mean), channel swaps, the fused preprocess (its resize the 2x2
//! mean, then (v / 255 - mean) / std), over batches and variable-size batches. Random
//! pixels, the seed printed.
mod common;
use common::{contexts, random, seed};
use gaio::{Color, DeviceBuffer, HostBuffer, Image, ImageLayout, Interp, PreprocessParams, Rect, Status, Stream};

fn pixels(seed: &mut u64, n: usize) -> Vec<u8> {
    random(seed, n).into_iter().map(|v| v as u8).collect()
}

/// The 2x2 mean of an HWC image's channel c at output (x, y).
fn mean2(src: &[u8], w: usize, ch: usize, x: usize, y: usize, c: usize) -> f64 {
    let at = |xx: usize, yy: usize| src[(yy * w + xx) * ch + c] as f64;
    (at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) + at(2 * x + 1, 2 * y + 1)) / 4.0
}

#[test]
fn resize_and_swap_channels() {
    let mut s = seed();
    let (b, w, h, ch) = (2usize, 16usize, 10usize, 3usize);
    for ctx in contexts("resize_and_swap_channels") {
        let stream = Stream::new(&ctx, 0).unwrap();
        let data = pixels(&mut s, b * w * h * ch);
        let up = HostBuffer::from_slice(&ctx, &data).unwrap();
        let mut src = DeviceBuffer::<u8>::new(&ctx, data.len()).unwrap();
        stream.copy(&mut src, &up).unwrap();
        let near = DeviceBuffer::<u8>::new(&ctx, b * (w / 2) * (h / 2) * ch).unwrap();
        let lin = DeviceBuffer::<u8>::new(&ctx, b * (w / 2) * (h / 2) * ch).unwrap();
        let swapped = DeviceBuffer::<u8>::new(&ctx, data.len()).unwrap();
        {
            let si = Image::new(&src, ImageLayout::Hwc, b as i32, w as i32, h as i32, ch as i32).unwrap();
            let ni = Image::new(&near, ImageLayout::Hwc, b as i32, (w / 2) as i32, (h / 2) as i32, ch as i32).unwrap();
            let li = Image::new(&lin, ImageLayout::Hwc, b as i32, (w / 2) as i32, (h / 2) as i32, ch as i32).unwrap();
            let wi = Image::new(&swapped, ImageLayout::Hwc, b as i32, w as i32, h as i32, ch as i32).unwrap();
            stream.resize(&si, &ni, Interp::Nearest).unwrap();
            stream.resize(&si, &li, Interp::Linear).unwrap();
            stream.cvt_color(&si, &wi, Color::SwapRb).unwrap();
        }
        let mut down = HostBuffer::<u8>::new(&ctx, near.len()).unwrap();
        stream.copy(&mut down, &near).unwrap();
        let got = down.to_vec().unwrap();
        let mut down_l = HostBuffer::<u8>::new(&ctx, lin.len()).unwrap();
        stream.copy(&mut down_l, &lin).unwrap();
        let got_l = down_l.to_vec().unwrap();
        let (w2, h2) = (w / 2, h / 2);
        for i in 0..b {
            let img = &data[i * w * h * ch..(i + 1) * w * h * ch];
            for y in 0..h2 {
                for x in 0..w2 {
                    for c in 0..ch {
                        let o = ((i * h2 + y) * w2 + x) * ch + c;
                        assert_eq!(got[o], img[(2 * y * w + 2 * x) * ch + c], "nearest at {}", o);
                        let want = mean2(img, w, ch, x, y, c);
                        assert!((got_l[o] as f64 - want).abs() <= 0.5 + 1e-9, "linear at {}: {} vs {}", o, got_l[o], want);
                    }
                }
            }
        }
        let mut down_s = HostBuffer::<u8>::new(&ctx, swapped.len()).unwrap();
        stream.copy(&mut down_s, &swapped).unwrap();
        let got_s = down_s.to_vec().unwrap();
        for p in 0..b * w * h {
            assert_eq!(&got_s[p * 3..p * 3 + 3], &[data[p * 3 + 2], data[p * 3 + 1], data[p * 3]]);
        }
    }
}

#[test]
fn preprocess_batches_and_varshape() {
    let mut s = seed();
    let (ow, oh) = (6usize, 4usize);
    let params = PreprocessParams::default();
    for ctx in contexts("preprocess_batches_and_varshape") {
        let stream = Stream::new(&ctx, 0).unwrap();
        // Two sources of different sizes; each one's ROI is twice the output's size.
        let sizes = [(12usize, 8usize), (20usize, 14usize)];
        let rois = [Rect { x: 0, y: 0, width: 12, height: 8 }, Rect { x: 4, y: 2, width: 12, height: 8 }];
        let datas: Vec<Vec<u8>> = sizes.iter().map(|&(w, h)| pixels(&mut s, w * h * 3)).collect();
        let mut srcs = Vec::new();
        for d in &datas {
            let up = HostBuffer::from_slice(&ctx, d).unwrap();
            let mut dev = DeviceBuffer::<u8>::new(&ctx, d.len()).unwrap();
            stream.copy(&mut dev, &up).unwrap();
            srcs.push(dev);
        }
        let out = DeviceBuffer::<f32>::new(&ctx, 2 * 3 * ow * oh).unwrap();
        {
            let imgs: Vec<Image<'_>> = srcs
                .iter()
                .zip(&sizes)
                .map(|(d, &(w, h))| Image::new(d, ImageLayout::Hwc, 1, w as i32, h as i32, 3).unwrap())
                .collect();
            let dst = Image::new(&out, ImageLayout::Chw, 2, ow as i32, oh as i32, 3).unwrap();
            stream.preprocess_varshape(&imgs, Some(&rois), &dst, &params).unwrap();
            // A roi count that does not match: refused before anything is enqueued.
            let e = stream.preprocess_varshape(&imgs, Some(&rois[..1]), &dst, &params).unwrap_err();
            assert_eq!(e.status, Status::InvalidArg);
        }
        let mut down = HostBuffer::<f32>::new(&ctx, out.len()).unwrap();
        stream.copy(&mut down, &out).unwrap();
        let got = down.to_vec().unwrap();
        for (i, (d, &(w, _))) in datas.iter().zip(&sizes).enumerate() {
            let r = rois[i];
            for c in 0..3 {
                for y in 0..oh {
                    for x in 0..ow {
                        // The ROI's 2x2 block: shift the source by the ROI's corner.
                        let at = |xx: usize, yy: usize| d[((yy + r.y as usize) * w + xx + r.x as usize) * 3 + c] as f64;
                        let v = (at(2 * x, 2 * y) + at(2 * x + 1, 2 * y) + at(2 * x, 2 * y + 1) + at(2 * x + 1, 2 * y + 1))
                            / 4.0;
                        let want = (v / 255.0 - params.mean[c] as f64) / params.std[c] as f64;
                        let g = got[((i * 3 + c) * oh + y) * ow + x] as f64;
                        assert!((g - want).abs() <= 1e-4, "image {} c {} ({}, {}): {} vs {}", i, c, x, y, g, want);
                    }
                }
            }
        }
    }
}

#[test]
fn images_larger_than_their_buffer_are_refused() {
    let ctx = gaio::Context::new(0).unwrap();
    let buf = DeviceBuffer::<u8>::new(&ctx, 100).unwrap();
    let e = Image::new(&buf, ImageLayout::Hwc, 1, 10, 10, 3).err().expect("300 bytes in 100");
    assert_eq!(e.status, Status::InvalidArg, "{}", e);
    assert!(e.message.contains("gaio_image_check"), "{}", e);
    let f = DeviceBuffer::<f64>::new(&ctx, 10).unwrap();
    assert!(Image::new(&f, ImageLayout::Hwc, 1, 10, 1, 1).err().expect("no f64 images").message.contains("f64"));
}

/// normalize, convert and reformat against direct computations; a mean of the wrong
/// length is an error that names both counts.
#[test]
fn normalize_convert_reformat() {
    let mut s = seed();
    let (w, h, ch) = (9usize, 7usize, 3usize);
    let (mean, std) = ([0.485f32, 0.456, 0.406], [0.229f32, 0.224, 0.225]);
    for ctx in contexts("normalize_convert_reformat") {
        let stream = Stream::new(&ctx, 0).unwrap();
        let data = pixels(&mut s, w * h * ch);
        let up = HostBuffer::from_slice(&ctx, &data).unwrap();
        let mut src = DeviceBuffer::<u8>::new(&ctx, data.len()).unwrap();
        stream.copy(&mut src, &up).unwrap();
        let norm = DeviceBuffer::<f32>::new(&ctx, data.len()).unwrap();
        let conv = DeviceBuffer::<f32>::new(&ctx, data.len()).unwrap();
        let chw = DeviceBuffer::<u8>::new(&ctx, data.len()).unwrap();
        {
            let si = Image::new(&src, ImageLayout::Hwc, 1, w as i32, h as i32, ch as i32).unwrap();
            let ni = Image::new(&norm, ImageLayout::Hwc, 1, w as i32, h as i32, ch as i32).unwrap();
            let ci = Image::new(&conv, ImageLayout::Hwc, 1, w as i32, h as i32, ch as i32).unwrap();
            let pi = Image::new(&chw, ImageLayout::Chw, 1, w as i32, h as i32, ch as i32).unwrap();
            stream.normalize(&si, &ni, 1.0 / 255.0, &mean, &std).unwrap();
            stream.convert(&si, &ci, 0.5, -3.0).unwrap();
            stream.reformat(&si, &pi).unwrap();
            let e = stream.normalize(&si, &ni, 1.0, &mean[..2], &std).unwrap_err();
            assert_eq!(e.status, Status::InvalidArg);
            assert!(e.message.contains("3 channels") && e.message.contains("holds 2"), "{}", e);
        }
        let mut dn = HostBuffer::<f32>::new(&ctx, data.len()).unwrap();
        let mut dc = HostBuffer::<f32>::new(&ctx, data.len()).unwrap();
        let mut dp = HostBuffer::<u8>::new(&ctx, data.len()).unwrap();
        stream.copy(&mut dn, &norm).unwrap();
        stream.copy(&mut dc, &conv).unwrap();
        stream.copy(&mut dp, &chw).unwrap();
        let (gn, gc, gp) = (dn.to_vec().unwrap(), dc.to_vec().unwrap(), dp.to_vec().unwrap());
        for (i, &v) in data.iter().enumerate() {
            let c = i % ch;
            let want = (v as f32 / 255.0 - mean[c]) / std[c];
            assert!((gn[i] - want).abs() <= 1e-5 * want.abs().max(1.0), "normalize at {}: {} vs {}", i, gn[i], want);
            assert_eq!(gc[i], v as f32 * 0.5 - 3.0, "convert at {}", i);
            let p = i / ch;
            assert_eq!(gp[c * w * h + p], v, "reformat at {}", i);
        }
    }
}
