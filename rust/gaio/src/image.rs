//! Image ops (NPP / CV-CUDA class): descriptors over device buffers and the ops as
//! Stream methods returning Futures. The buffers remember each op: host access to them
//! waits for it. Every op checks its descriptors in gaio before anything is enqueued.
use crate::buffer::{DeviceBuffer, Element, LastUse, Memory};
use crate::error::{check, invalid, Result};
use crate::future::Future;
use crate::stream::Stream;
use gaio_sys as sys;

pub use sys::gaio_rect as Rect;

/// How pixels are laid out: channels interleaved (HWC; NHWC for batches) or planar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageLayout {
    Hwc,
    Chw,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interp {
    /// OpenCV's INTER_NEAREST.
    Nearest,
    /// Pixel centres (PIL, CV-CUDA, OpenCV's INTER_NEAREST_EXACT).
    NearestExact,
    Linear,
    Cubic,
    Area,
}

impl Interp {
    fn raw(self) -> sys::gaio_interp {
        match self {
            Interp::Nearest => sys::GAIO_INTERP_NEAREST,
            Interp::NearestExact => sys::GAIO_INTERP_NEAREST_EXACT,
            Interp::Linear => sys::GAIO_INTERP_LINEAR,
            Interp::Cubic => sys::GAIO_INTERP_CUBIC,
            Interp::Area => sys::GAIO_INTERP_AREA,
        }
    }
}

/// Colour conversions of `Stream::cvt_color` (see include/gaio/image.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    SwapRb,
    RgbToGray,
    BgrToGray,
    GrayToRgb,
    RgbToRgba,
    RgbaToRgb,
    RgbToBgra,
    RgbaToBgr,
}

impl Color {
    fn raw(self) -> sys::gaio_color {
        match self {
            Color::SwapRb => sys::GAIO_COLOR_SWAP_RB,
            Color::RgbToGray => sys::GAIO_COLOR_RGB2GRAY,
            Color::BgrToGray => sys::GAIO_COLOR_BGR2GRAY,
            Color::GrayToRgb => sys::GAIO_COLOR_GRAY2RGB,
            Color::RgbToRgba => sys::GAIO_COLOR_RGB2RGBA,
            Color::RgbaToRgb => sys::GAIO_COLOR_RGBA2RGB,
            Color::RgbToBgra => sys::GAIO_COLOR_RGB2BGRA,
            Color::RgbaToBgr => sys::GAIO_COLOR_RGBA2BGR,
        }
    }
}

/// A packed image or batch of equal-size images over a device buffer.
#[derive(Clone, Copy)]
pub struct Image<'a> {
    raw: sys::gaio_image,
    last_use: &'a LastUse,
}

// The descriptor names a buffer (thread-safe) and borrows its use record (Sync).
unsafe impl Send for Image<'_> {}
unsafe impl Sync for Image<'_> {}

impl<'a> Image<'a> {
    /// `batch` images of width x height x channels in buf, packed; gaio checks that
    /// the buffer holds them.
    pub fn new<T: Element>(buf: &'a DeviceBuffer<T>, layout: ImageLayout, batch: i32, width: i32, height: i32,
                           channels: i32) -> Result<Image<'a>> {
        if T::DTYPE == 0 {
            return Err(invalid(format!("Image::new: gaio has no dtype for {}", std::any::type_name::<T>())));
        }
        let raw = sys::gaio_image {
            buffer: buf.raw(),
            offset: 0,
            dtype: T::DTYPE,
            layout: match layout {
                ImageLayout::Hwc => sys::GAIO_LAYOUT_HWC,
                ImageLayout::Chw => sys::GAIO_LAYOUT_CHW,
            },
            batch,
            width,
            height,
            channels,
            row_pitch: 0,
            plane_pitch: 0,
            image_stride: 0,
        };
        let mut resolved = raw;
        check(unsafe { sys::gaio_image_check(&raw, &mut resolved, std::ptr::null_mut()) })?;
        Ok(Image { raw, last_use: buf.last_use() })
    }
}

/// torchvision's convention by default: RGB in, scale 1/255, ImageNet mean and std.
#[derive(Clone, Copy, Debug)]
pub struct PreprocessParams {
    pub interp: Interp,
    pub swap_rb: bool,
    pub scale: f32,
    pub mean: [f32; 4],
    pub std: [f32; 4],
}

impl Default for PreprocessParams {
    fn default() -> Self {
        PreprocessParams {
            interp: Interp::Linear,
            swap_rb: false,
            scale: 1.0 / 255.0,
            mean: [0.485, 0.456, 0.406, 0.0],
            std: [0.229, 0.224, 0.225, 1.0],
        }
    }
}

impl PreprocessParams {
    fn raw(&self) -> sys::gaio_preprocess_params {
        sys::gaio_preprocess_params {
            interp: self.interp.raw(),
            swap_rb: self.swap_rb as i32,
            scale: self.scale,
            mean: self.mean,
            std: self.std,
        }
    }
}

/// rois: None, or one per image of the batch (checked by gaio).
fn rois_ptr(rois: Option<&[Rect]>) -> *const Rect {
    rois.map_or(std::ptr::null(), |r| r.as_ptr())
}

impl Stream {
    /// Submits `op`, recorded as a use of every image's buffer.
    fn used(&self, images: &[&Image<'_>], op: impl FnOnce() -> sys::gaio_status) -> Result<Future> {
        let uses: Vec<&LastUse> = images.iter().map(|i| i.last_use).collect();
        self.op(&uses, op)
    }

    /// dst = src resized to dst's size, each image of the batch.
    pub fn resize(&self, src: &Image<'_>, dst: &Image<'_>, interp: Interp) -> Result<Future> {
        self.used(&[src, dst], || unsafe { sys::gaio_resize(self.raw, &src.raw, &dst.raw, interp.raw()) })
    }

    /// Image i of dst = rois[i] of image i of src, resized (one launch for the batch).
    pub fn crop_resize(&self, src: &Image<'_>, rois: Option<&[Rect]>, dst: &Image<'_>, interp: Interp)
                       -> Result<Future> {
        check_rois("Stream::crop_resize", rois, src.raw.batch.max(0) as usize)?;
        self.used(&[src, dst], || unsafe {
            sys::gaio_crop_resize(self.raw, &src.raw, rois_ptr(rois), &dst.raw, interp.raw())
        })
    }

    /// The same over images of any sizes: srcs[i] (batch 1 each) -> image i of dst.
    pub fn crop_resize_varshape(&self, srcs: &[Image<'_>], rois: Option<&[Rect]>, dst: &Image<'_>, interp: Interp)
                                -> Result<Future> {
        check_varshape("Stream::crop_resize_varshape", srcs, rois)?;
        let raws: Vec<sys::gaio_image> = srcs.iter().map(|i| i.raw).collect();
        let mut all: Vec<&Image<'_>> = srcs.iter().collect();
        all.push(dst);
        self.used(&all, || unsafe {
            sys::gaio_crop_resize_varshape(self.raw, raws.as_ptr(), raws.len() as i32, rois_ptr(rois), &dst.raw,
                                           interp.raw())
        })
    }

    pub fn cvt_color(&self, src: &Image<'_>, dst: &Image<'_>, code: Color) -> Result<Future> {
        self.used(&[src, dst], || unsafe {
            sys::gaio_cvt_color(self.raw, &src.raw, &dst.raw, code.raw(), sys::GAIO_YUV_BT601_LIMITED)
        })
    }

    /// dst = saturate(src * scale + offset) in dst's dtype (OpenCV's convertTo); same
    /// layout and shape.
    pub fn convert(&self, src: &Image<'_>, dst: &Image<'_>, scale: f64, offset: f64) -> Result<Future> {
        self.used(&[src, dst], || unsafe { sys::gaio_convert(self.raw, &src.raw, &dst.raw, scale, offset) })
    }

    /// dst(c) = (src(c) * scale - mean[c]) / std[c] per channel; dst f32 (or f16), same
    /// layout and shape; mean and std hold one value per channel.
    pub fn normalize(&self, src: &Image<'_>, dst: &Image<'_>, scale: f32, mean: &[f32], std: &[f32])
                     -> Result<Future> {
        let c = src.raw.channels.max(0) as usize;
        if mean.len() != c || std.len() != c {
            return Err(invalid(format!("Stream::normalize: the images have {} channels but mean holds {} values \
                                        and std {}", c, mean.len(), std.len())));
        }
        self.used(&[src, dst], || unsafe {
            sys::gaio_normalize(self.raw, &src.raw, &dst.raw, scale, mean.as_ptr(), std.as_ptr())
        })
    }

    /// HWC <-> CHW with the same dtype, size and channels.
    pub fn reformat(&self, src: &Image<'_>, dst: &Image<'_>) -> Result<Future> {
        self.used(&[src, dst], || unsafe { sys::gaio_reformat(self.raw, &src.raw, &dst.raw) })
    }

    /// Crop, resize, channel swap and normalisation in one pass: u8 HWC in, f32 CHW or
    /// HWC out (a model's input).
    pub fn preprocess(&self, src: &Image<'_>, rois: Option<&[Rect]>, dst: &Image<'_>, params: &PreprocessParams)
                      -> Result<Future> {
        check_rois("Stream::preprocess", rois, src.raw.batch.max(0) as usize)?;
        let p = params.raw();
        self.used(&[src, dst], || unsafe { sys::gaio_preprocess(self.raw, &src.raw, rois_ptr(rois), &dst.raw, &p) })
    }

    /// The same over images of any sizes: srcs[i] -> image i of dst.
    pub fn preprocess_varshape(&self, srcs: &[Image<'_>], rois: Option<&[Rect]>, dst: &Image<'_>,
                               params: &PreprocessParams) -> Result<Future> {
        check_varshape("Stream::preprocess_varshape", srcs, rois)?;
        let raws: Vec<sys::gaio_image> = srcs.iter().map(|i| i.raw).collect();
        let p = params.raw();
        let mut all: Vec<&Image<'_>> = srcs.iter().collect();
        all.push(dst);
        self.used(&all, || unsafe {
            sys::gaio_preprocess_varshape(self.raw, raws.as_ptr(), raws.len() as i32, rois_ptr(rois), &dst.raw, &p)
        })
    }
}

fn check_varshape(what: &str, srcs: &[Image<'_>], rois: Option<&[Rect]>) -> Result<()> {
    if srcs.is_empty() || srcs.len() > i32::MAX as usize {
        return Err(invalid(format!("{}: {} images", what, srcs.len())));
    }
    check_rois(what, rois, srcs.len())
}

/// None, or one roi per image of the n.
fn check_rois(what: &str, rois: Option<&[Rect]>, n: usize) -> Result<()> {
    match rois {
        Some(r) if r.len() != n => Err(invalid(format!("{}: {} rois for {} images", what, r.len(), n))),
        _ => Ok(()),
    }
}
