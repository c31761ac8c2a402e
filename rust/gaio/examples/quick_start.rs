//! The README's Rust quick start (rust/check-examples checks that the two agree).
use gaio::{Context, DeviceBuffer, HostBuffer, Image, ImageLayout, Stream};

#[tokio::main]
async fn main() -> gaio::Result<()> {
    let ctx = Context::best()?;                  // the first GPU, else the host
    let stream = Stream::new(&ctx, 0)?;
    let frame = HostBuffer::from_slice(&ctx, &vec![128u8; 224 * 224 * 3])?;
    let mut pixels = DeviceBuffer::<u8>::new_async(&stream, frame.len())?;
    let tensor = DeviceBuffer::<f32>::new_async(&stream, frame.len())?;
    let mut out = HostBuffer::<f32>::new(&ctx, frame.len())?;
    stream.copy(&mut pixels, &frame)?;           // ops return futures: drop them freely
    {
        let src = Image::new(&pixels, ImageLayout::Hwc, 1, 224, 224, 3)?;
        let dst = Image::new(&tensor, ImageLayout::Hwc, 1, 224, 224, 3)?;
        stream.normalize(&src, &dst, 1.0 / 255.0, &[0.485, 0.456, 0.406], &[0.229, 0.224, 0.225])?;
    }
    stream.copy(&mut out, &tensor)?;
    stream.fence()?.await?;                      // the task sleeps; no thread waits
    println!("{}", out.as_slice()?[0]);
    Ok(())
}
