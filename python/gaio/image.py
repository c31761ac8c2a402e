"""Image ops on gaio tensors: the NPP / CV-CUDA operator set of ``gaio/image.h``.

Every op writes into a ``dst`` tensor the caller made (``gaio.empty``), returns
None and runs asynchronously: it is enqueued on ``stream`` (default: the stream
``src`` last used, else its context's default stream) and has not necessarily run
when the call returns. Wait with ``await stream.fence()``, ``stream.synchronize()``
or ``dst.numpy()``. Each op sets ``.stream`` of every tensor it touched to that
stream, so that DLPack consumers and later ops order themselves after it. Inputs
stay alive until the op has run, even if the caller drops them.

How a tensor reads as an image (``layout=``):

* ``"HWC"`` (the default): ``[N, H, W, C]``, ``[H, W, C]`` or ``[H, W]`` (one
  channel); a pixel's channels and a row's pixels must be adjacent in memory.
* ``"CHW"``: ``[N, C, H, W]`` or ``[C, H, W]``; a row's elements adjacent.
* ``"NV12"`` / ``"I420"`` (``cvt_color``'s YUV source only): a uint8 tensor
  ``[H * 3 / 2, W]`` holding a packed 4:2:0 frame (the Y plane, then the chroma),
  as OpenCV's ``COLOR_YUV2RGB_NV12`` reads it, or a batch ``[N, H * 3 / 2, W]``.

Enumerations are lowercase strings (``interp="linear"``, ``border="reflect_101"``).
Bad arguments raise ``gaio.InvalidArgumentError`` (a ``ValueError``) naming the
function and the argument; what gaio itself refuses (shapes, dtypes, devices)
raises the gaio.Error of its status, whose message names the C function
(``gaio_resize: ...``). A refused call enqueues nothing.

Semantics follow OpenCV 4 (``cv::resize``, ``cv::cvtColor``, ...); each function
says where gaio differs.
"""
from __future__ import annotations

import ctypes

from ctypes import byref, c_double, c_float
from operator import index as _index
from typing import Any, Iterable, Optional, Sequence, Tuple, Union

from ._lib import Image, PreprocessParams, Rect, lib
from .errors import InvalidArgumentError, raise_status
from .stream import Stream
from .tensor import Tensor

__all__ = ["resize", "crop_resize", "crop_resize_varshape", "crop", "copy_make_border", "flip", "rotate",
           "warp_affine", "cvt_color", "convert", "normalize", "reformat", "preprocess", "preprocess_varshape",
           "INTERPS", "BORDERS", "FLIP_MODES", "COLOR_CODES", "YUV_MATRICES", "LAYOUTS", "IMAGENET_MEAN",
           "IMAGENET_STD"]

RectLike = Tuple[int, int, int, int]
Rois = Optional[Union[RectLike, Sequence[Optional[RectLike]]]]
Floats = Union[float, Sequence[float]]

#: gaio_interp codes by name
INTERPS = {"nearest": 0, "nearest_exact": 1, "linear": 2, "cubic": 3, "area": 4}
#: gaio_border codes by name
BORDERS = {"constant": 0, "replicate": 1, "reflect": 2, "reflect_101": 3, "wrap": 4}
#: gaio_flip_mode codes by name
FLIP_MODES = {"horizontal": 1, "vertical": 2, "both": 3}
#: gaio_color codes by name
COLOR_CODES = {"swap_rb": 1, "rgb2gray": 2, "bgr2gray": 3, "gray2rgb": 4, "rgb2rgba": 5, "rgba2rgb": 6,
               "rgb2bgra": 7, "rgba2bgr": 8, "yuv2rgb": 9, "yuv2bgr": 10}
#: gaio_yuv codes by name
YUV_MATRICES = {"bt601_limited": 0, "bt601_full": 1, "bt709_limited": 2, "bt709_full": 3}
#: gaio_layout codes by name ("nhwc" and "nchw" are the same layouts with a batch)
LAYOUTS = {"hwc": 1, "chw": 2, "nv12": 3, "i420": 4}

#: torchvision's ImageNet normalisation, preprocess's defaults (with scale 1/255)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

_HWC, _CHW, _NV12, _I420 = 1, 2, 3, 4
_YUV_CODES = (9, 10)
_U8 = 1
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_Float4 = c_float * 4
_Double6 = c_double * 6

# Bound once: attribute lookups on the CDLL are a dict hit each, but these run per call.
_to_image = lib.gaio_dlpack_view_to_image
_last_error = lib.gaio_last_error
_resize = lib.gaio_resize
_crop_resize = lib.gaio_crop_resize
_crop_resize_varshape = lib.gaio_crop_resize_varshape
_crop = lib.gaio_crop
_copy_make_border = lib.gaio_copy_make_border
_flip = lib.gaio_flip
_rotate = lib.gaio_rotate
_warp_affine = lib.gaio_warp_affine
_cvt_color = lib.gaio_cvt_color
_convert = lib.gaio_convert
_normalize = lib.gaio_normalize
_reformat = lib.gaio_reformat
_preprocess = lib.gaio_preprocess
_preprocess_varshape = lib.gaio_preprocess_varshape


def _folded(table: dict[str, int]) -> dict[str, int]:
    """The table with upper-case spellings too, so that the common cases ("linear",
    "HWC") cost one dict lookup and no str.lower()."""
    out = dict(table)
    out.update({k.upper(): v for k, v in table.items()})
    return out


_INTERP = _folded(INTERPS)
_BORDER = _folded({**BORDERS, "reflect101": 3})  # OpenCV spells it BORDER_REFLECT101 too
_FLIP = _folded(FLIP_MODES)
_COLOR = _folded(COLOR_CODES)
_YUV = _folded(YUV_MATRICES)
_LAYOUT = _folded({**LAYOUTS, "nhwc": 1, "nchw": 2})
_IMAGE_LAYOUT = _folded({"hwc": 1, "chw": 2, "nhwc": 1, "nchw": 2})


# ---- argument helpers -------------------------------------------------------------


def _bad(fn: str, text: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"gaio.image.{fn}: {text}")


def _code(fn: str, arg: str, value: Any, table: dict[str, int], names: Iterable[str]) -> int:
    code = table.get(value) if type(value) is str else None
    if code is None:
        if isinstance(value, str):
            code = table.get(value.lower())
        if code is None:
            raise _bad(fn, f"{arg} {value!r} is not one of {', '.join(map(repr, names))}")
    return code


def _layout(fn: str, arg: str, value: Any, table: dict[str, int] = _IMAGE_LAYOUT) -> int:
    code = table.get(value) if type(value) is str else None
    if code is None:
        if isinstance(value, str):
            code = table.get(value.upper())
        if code is None:
            names = ("HWC", "CHW", "NV12", "I420") if table is _LAYOUT else ("HWC", "CHW")
            raise _bad(fn, f"{arg} {value!r} is not one of {', '.join(map(repr, names))}")
    return code


def _stream(fn: str, stream: Stream | None, t: Tensor) -> Stream:
    """Where the op runs: the caller's stream, else the one t last used, else t's
    context's default stream (as tensor._stream_for, with the function named)."""
    if stream is None:
        s = t.stream
        return s if s is not None else t.buffer.context.default_stream
    if not isinstance(stream, Stream):
        raise _bad(fn, f"stream is {type(stream).__name__}, not a gaio.Stream")
    return stream


def _tensor(fn: str, arg: str, t: Any) -> Tensor:
    if not isinstance(t, Tensor):
        raise _bad(fn, f"{arg} is {type(t).__name__}, not a gaio.Tensor (make one with gaio.tensor, gaio.empty "
                       "or gaio.from_dlpack)")
    return t


def _writable(fn: str, t: Tensor) -> None:
    # gaio's ops do not check the DLPack read-only flag (dlpack.h): the binding must.
    if t.read_only:
        raise _bad(fn, "dst is read-only (its producer exported it so)")


def _describe(fn: str, arg: str, t: Any, layout: int, into: Image | None = None) -> Image:
    """Tensor t read as an HWC or CHW image (copied into ``into`` when given). A tensor
    is a fixed view, so its descriptor is made once per layout and kept on it."""
    if type(t) is not Tensor:
        _tensor(fn, arg, t)
    cache = t._images
    img = cache.get(layout) if cache is not None else None
    if img is None:
        img = Image()
        st = _to_image(byref(t._view()), layout, byref(img))
        if st:
            msg = (_last_error() or b"").decode(errors="replace")
            raise_status(st, f"gaio.image.{fn}: {arg} ({t.dtype}{list(t.shape)}, layout "
                             f"{'HWC' if layout == _HWC else 'CHW'}) is not an image gaio reads: {msg}")
        if cache is None:
            t._images = cache = {}
        cache[layout] = img
    if into is not None:
        ctypes.pointer(into)[0] = img
        return into
    return img


def _describe_all(fn: str, srcs: Any, layout: int) -> tuple[list[Tensor], Any]:
    """A varshape op's sources as a list and their descriptors as a C array."""
    srcs = _srcs_list(fn, srcs)
    imgs = (Image * len(srcs))()
    for i, t in enumerate(srcs):
        _describe(fn, f"srcs[{i}]", t, layout, imgs[i])
    return srcs, imgs


def _describe_yuv(fn: str, arg: str, t: Any, layout: int, img: Image) -> None:
    """Fills img with a uint8 tensor [H * 3 / 2, W] (or [N, H * 3 / 2, W]) read as
    NV12 or I420 frames. A row stride above W is the frame's pitch: the chroma
    rows (NV12) or the half-width U and V rows (I420, row_pitch / 2) follow the Y
    plane at that pitch, as a pitched decoder frame lays them out."""
    t = _tensor(fn, arg, t)
    name = "NV12" if layout == _NV12 else "I420"
    shape, strides = t.shape, t.strides
    if t._dtype != _U8 or len(shape) not in (2, 3):
        raise _bad(fn, f"{arg} is {t.dtype}{list(shape)}: an {name} frame is a uint8 tensor [H * 3 / 2, W] or "
                       "[N, H * 3 / 2, W]")
    rows, width = shape[-2], shape[-1]
    if rows % 3:
        raise _bad(fn, f"{arg} has {rows} rows: an {name} frame has H * 3 / 2 (a multiple of 3)")
    if strides[-1] != 1 or strides[-2] < width:
        raise _bad(fn, f"{arg}'s strides {list(strides)} do not hold each row's bytes adjacent, rows apart")
    batch = shape[0] if len(shape) == 3 else 1
    if batch > 1 and strides[0] == 0:
        raise _bad(fn, f"{arg}'s first stride is 0: the frames of a batch must not overlap")
    height = rows // 3 * 2
    img.buffer, img.offset, img.dtype, img.layout = t.buffer._h, t.offset, _U8, layout
    img.batch, img.width, img.height, img.channels = batch, width, height, 3
    img.row_pitch, img.plane_pitch = strides[-2], strides[-2] * height
    img.image_stride = strides[0] if batch > 1 else 0


def _real(fn: str, arg: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _bad(fn, f"{arg} {value!r} is not a number") from None


def _int32(fn: str, arg: str, value: Any) -> int:
    try:
        v = _index(value)
    except TypeError:
        raise _bad(fn, f"{arg} {value!r} is not an int") from None
    if not _INT32_MIN <= v <= _INT32_MAX:
        raise _bad(fn, f"{arg} {v} does not fit in 32 bits")
    return v


def _floats(fn: str, arg: str, value: Any) -> list[float]:
    """A number or a sequence of numbers as a list (a number: one entry)."""
    try:
        return [float(value)]
    except TypeError:
        pass
    except ValueError:
        raise _bad(fn, f"{arg} {value!r} is not a number or a sequence of numbers") from None
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError):
        raise _bad(fn, f"{arg} {value!r} is not a number or a sequence of numbers") from None


_channel_arrays: dict = {}  # (value, channels) -> c_float array: services pass the same mean/std each call


def _per_channel(fn: str, arg: str, value: Any, channels: int) -> Any:
    """value as `channels` floats: a number for every channel, or one per channel."""
    key = (value, channels) if type(value) in (tuple, float, int) else None
    if key is not None:
        try:
            hit = _channel_arrays.get(key)
        except TypeError:  # a tuple holding something unhashable
            key = hit = None
        if hit is not None:
            return hit
    arr = _per_channel_array(fn, arg, value, channels)
    if key is not None and len(_channel_arrays) < 1024:
        _channel_arrays[key] = arr  # read only by C (const float *)
    return arr


def _per_channel_array(fn: str, arg: str, value: Any, channels: int) -> Any:
    vals = _floats(fn, arg, value)
    if len(vals) == 1:
        vals *= channels
    elif len(vals) != channels:
        raise _bad(fn, f"{arg} has {len(vals)} values but the image has {channels} channels (give one per "
                       "channel, or a single number)")
    return (c_float * channels)(*vals)


def _fill_value(fn: str, value: Any) -> Any:
    """A constant fill as float[4] (None: NULL, zeros). A number fills every channel;
    a sequence of 1 to 4 gives channels 0.. and zeros after, as cv::Scalar does."""
    if value is None:
        return None
    try:
        return _Float4(*([float(value)] * 4))
    except TypeError:
        pass
    except ValueError:
        raise _bad(fn, f"value {value!r} is not a number or a sequence of 1 to 4 numbers") from None
    try:
        vals = [float(v) for v in value]
    except (TypeError, ValueError):
        raise _bad(fn, f"value {value!r} is not a number or a sequence of 1 to 4 numbers") from None
    if not 1 <= len(vals) <= 4:
        raise _bad(fn, f"value has {len(vals)} entries: give 1 to 4 (one per channel)")
    return _Float4(*vals)


def _rect(fn: str, arg: str, r: Any) -> Rect:
    try:
        x, y, w, h = r
        vals = (_index(x), _index(y), _index(w), _index(h))
    except (TypeError, ValueError):
        raise _bad(fn, f"{arg} {r!r} is not an (x, y, width, height) tuple of ints") from None
    rect = Rect(*vals)
    # ctypes truncates silently, and a wrapped value could land inside the image.
    if (rect.x, rect.y, rect.width, rect.height) != vals:
        raise _bad(fn, f"{arg} {r!r} does not fit in 32-bit ints")
    return rect


def _is_rect(r: Any) -> bool:
    """Whether r is one (x, y, w, h) rather than a sequence of them."""
    try:
        if len(r) != 4:
            return False
        _index(r[0])
        return True
    except TypeError:
        return False


def _rects(fn: str, rois: Any, sizes: Sequence[tuple[int, int]]) -> Any:
    """rois for len(sizes) images as a Rect array, or None (whole images).

    rois: None; one (x, y, w, h) for every image; or a sequence with one entry per
    image, each an (x, y, w, h) or None (that image whole; sizes gives its w, h)."""
    if rois is None:
        return None
    n = len(sizes)
    if _is_rect(rois):
        one = _rect(fn, "rois", rois)
        return (Rect * n)(*([one] * n))
    try:
        count = len(rois)
    except TypeError:
        raise _bad(fn, f"rois is {type(rois).__name__}: give None, one (x, y, width, height), or one per "
                       "image") from None
    if count != n:
        raise _bad(fn, f"rois has {count} entries but there are {n} images (give one per image, or a single "
                       "(x, y, width, height) for all)")
    out = (Rect * n)()
    for i, r in enumerate(rois):
        out[i] = Rect(0, 0, sizes[i][0], sizes[i][1]) if r is None else _rect(fn, f"rois[{i}]", r)
    return out


def _srcs_list(fn: str, srcs: Any) -> list:
    if isinstance(srcs, Tensor):
        raise _bad(fn, "srcs is one gaio.Tensor: give a list of tensors, one image each (a uniform batch takes "
                       "the non-varshape op)")
    try:
        srcs = list(srcs)
    except TypeError:
        raise _bad(fn, f"srcs is {type(srcs).__name__}, not a sequence of gaio.Tensor") from None
    if not srcs:
        raise _bad(fn, "srcs is empty: a batch holds at least one image")
    if len(srcs) > _INT32_MAX:
        raise _bad(fn, f"srcs holds {len(srcs)} images, more than a gaio call takes")
    return srcs


def _check(st: int) -> None:
    if st:
        raise_status(st)  # gaio_last_error(): the C function's own words


# ---- geometry ----------------------------------------------------------------------


def resize(src: Tensor, dst: Tensor, interp: str = "linear", *, stream: Stream | None = None,
           layout: str = "HWC") -> None:
    """dst = src resized to dst's height and width, each image of a batch alone
    (``cv2.resize(src, (W, H), interpolation=...)``).

    interp: ``"nearest"`` (INTER_NEAREST), ``"nearest_exact"`` (pixel centres, as
    PIL, CV-CUDA and OpenCV >= 4.7's INTER_NEAREST_EXACT; OpenCV 4.6 takes the other
    pixel at exact ties of even sizes), ``"linear"``, ``"cubic"`` (a = -0.75) or
    ``"area"``. dtype uint8, uint16 or float32, the same in src and dst; HWC with 1,
    3 or 4 channels, or CHW with any; the same layout, channels and batch in both.
    """
    fn = "resize"
    code = _code(fn, "interp", interp, _INTERP, INTERPS)
    lay = _layout(fn, "layout", layout)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_resize(s._h, byref(si), byref(di), code))
    src.stream = dst.stream = s


def crop_resize(src: Tensor, dst: Tensor, rois: Rois = None, interp: str = "linear", *,
                stream: Stream | None = None, layout: str = "HWC") -> None:
    """Image i of dst = the rectangle rois[i] of image i of src, resized to dst's
    size, for the whole batch in one launch (``cv2.resize(src[i][y:y+h, x:x+w],
    ...)`` per image).

    rois: None (whole images), one ``(x, y, width, height)`` for every image, or a
    sequence of one per image (None entries: that image whole). interp, dtypes and
    layouts as :func:`resize`.
    """
    fn = "crop_resize"
    code = _code(fn, "interp", interp, _INTERP, INTERPS)
    lay = _layout(fn, "layout", layout)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    r = _rects(fn, rois, [(si.width, si.height)] * si.batch) if rois is not None else None
    s = _stream(fn, stream, src)
    _check(_crop_resize(s._h, byref(si), r, byref(di), code))
    src.stream = dst.stream = s


def crop_resize_varshape(srcs: Sequence[Tensor], dst: Tensor, rois: Rois = None, interp: str = "linear", *,
                         stream: Stream | None = None, layout: str = "HWC") -> None:
    """A variable-size batch: image i of dst = rois[i] of srcs[i] resized to dst's
    size, in one launch (CV-CUDA's varshape resize; ``cv2.resize`` per image).

    srcs: a list of single images (``[H, W, C]``, any sizes and buffers, one dtype,
    layout and channel count); dst: a batch of ``len(srcs)`` images. rois as
    :func:`crop_resize`. The stream defaults to the one ``srcs[0]`` last used.
    """
    fn = "crop_resize_varshape"
    code = _code(fn, "interp", interp, _INTERP, INTERPS)
    lay = _layout(fn, "layout", layout)
    srcs, imgs = _describe_all(fn, srcs, lay)
    n = len(srcs)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    r = _rects(fn, rois, [(im.width, im.height) for im in imgs]) if rois is not None else None
    s = _stream(fn, stream, srcs[0])
    _check(_crop_resize_varshape(s._h, imgs, n, r, byref(di), code))
    for t in srcs:
        t.stream = s
    dst.stream = s


def crop(src: Tensor, dst: Tensor, roi: RectLike, *, stream: Stream | None = None, layout: str = "HWC") -> None:
    """dst = a copy of the rectangle ``roi = (x, y, width, height)`` of every image of
    src; dst is width x height (``src[y:y+h, x:x+w].copy()``, NPP's copy of a ROI).
    Any dtype, HWC or CHW."""
    fn = "crop"
    lay = _layout(fn, "layout", layout)
    r = _rect(fn, "roi", roi)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_crop(s._h, byref(si), r, byref(di)))
    src.stream = dst.stream = s


def copy_make_border(src: Tensor, dst: Tensor, top: int, left: int, border: str = "constant",
                     value: Floats | None = None, *, stream: Stream | None = None, layout: str = "HWC") -> None:
    """dst = src placed at (left, top) inside dst, the rest filled by ``border``
    (``cv2.copyMakeBorder(src, top, bottom, left, right, ...)``, with bottom and right
    following from dst's size).

    border: ``"constant"``, ``"replicate"``, ``"reflect"``, ``"reflect_101"`` or
    ``"wrap"``. value (``"constant"`` only): None for zeros, a number for every
    channel (unlike OpenCV, where a number is ``Scalar(v, 0, 0, 0)``), or 1 to 4
    per-channel values (missing ones 0); converted to the dtype with rounding and
    saturation.
    """
    fn = "copy_make_border"
    code = _code(fn, "border", border, _BORDER, BORDERS)
    lay = _layout(fn, "layout", layout)
    t, l = _int32(fn, "top", top), _int32(fn, "left", left)
    v = _fill_value(fn, value)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_copy_make_border(s._h, byref(si), byref(di), t, l, code, v))
    src.stream = dst.stream = s


def flip(src: Tensor, dst: Tensor, mode: str, *, stream: Stream | None = None, layout: str = "HWC") -> None:
    """dst = src mirrored (``cv2.flip``): ``"horizontal"`` around the vertical axis
    (flipCode 1), ``"vertical"`` around the horizontal axis (0), ``"both"`` (-1).
    Any dtype; dst the same shape as src."""
    fn = "flip"
    code = _code(fn, "mode", mode, _FLIP, FLIP_MODES)
    lay = _layout(fn, "layout", layout)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_flip(s._h, byref(si), byref(di), code))
    src.stream = dst.stream = s


def rotate(src: Tensor, dst: Tensor, degrees: int, *, stream: Stream | None = None, layout: str = "HWC") -> None:
    """dst = src rotated clockwise by 90, 180 or 270 degrees (``cv2.rotate`` with
    ROTATE_90_CLOCKWISE, ROTATE_180, ROTATE_90_COUNTERCLOCKWISE); -90 is 270. dst is
    W x H for 90 and 270. Any dtype."""
    fn = "rotate"
    d = _int32(fn, "degrees", degrees) % 360
    if d not in (90, 180, 270):
        raise _bad(fn, f"degrees {degrees!r} is not a multiple of 90 that turns the image (90, 180, 270, -90, ...)")
    lay = _layout(fn, "layout", layout)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_rotate(s._h, byref(si), byref(di), d))
    src.stream = dst.stream = s


def _matrix(fn: str, m: Any) -> Any:
    try:
        rows = list(m)
        if len(rows) == 2:
            vals = [float(v) for row in rows for v in row]
            if any(len(row) != 3 for row in rows):
                vals = []
        else:
            vals = [float(v) for v in rows]
    except (TypeError, ValueError):
        vals = []
    if len(vals) != 6:
        raise _bad(fn, f"m {m!r} is not a 2x3 matrix (two rows of three numbers, or six numbers row by row)")
    return _Double6(*vals)


def warp_affine(src: Tensor, dst: Tensor, m: Any, interp: str = "linear", inverse_map: bool = False,
                value: Floats | None = None, *, stream: Stream | None = None, layout: str = "HWC") -> None:
    """dst(x, y) = src(M^-1 (x, y)), M the 2x3 matrix mapping src to dst, or
    src(M (x, y)) with ``inverse_map=True`` (``cv2.warpAffine(src, m, (W, H),
    flags=interp | WARP_INVERSE_MAP, borderMode=BORDER_CONSTANT, borderValue=value)``,
    computed as OpenCV does, in 1/32-pixel fixed point).

    m: two rows of three numbers (a numpy (2, 3) array will do) or six numbers.
    interp: ``"nearest"`` or ``"linear"``. Pixels mapped outside src take value
    (as :func:`copy_make_border`'s).
    """
    fn = "warp_affine"
    code = _code(fn, "interp", interp, _INTERP, INTERPS)
    lay = _layout(fn, "layout", layout)
    mat = _matrix(fn, m)
    v = _fill_value(fn, value)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_warp_affine(s._h, byref(si), byref(di), mat, code, 1 if inverse_map else 0, v))
    src.stream = dst.stream = s


# ---- color -------------------------------------------------------------------------


def cvt_color(src: Tensor, dst: Tensor, code: str, yuv: str = "bt601_limited", *, stream: Stream | None = None,
              layout: str = "HWC") -> None:
    """dst = src in another colour space (``cv2.cvtColor``); HWC images of one dtype
    (uint8, uint16, float32) and size.

    code: ``"swap_rb"`` (RGB <-> BGR, RGBA <-> BGRA), ``"rgb2gray"``, ``"bgr2gray"``
    (3 or 4 channels -> 1, BT.601 weights), ``"gray2rgb"`` (1 -> 3 or 4),
    ``"rgb2rgba"``, ``"rgba2rgb"``, ``"rgb2bgra"``, ``"rgba2bgr"``, ``"yuv2rgb"``,
    ``"yuv2bgr"``. The YUV codes read an NV12 or I420 frame: pass ``layout="NV12"``
    or ``"I420"`` and a uint8 src ``[H * 3 / 2, W]`` (``[N, H * 3 / 2, W]``), and
    write a uint8 dst of 3 or 4 channels (alpha 255). yuv: the matrix and range,
    ``"bt601_limited"`` (OpenCV's COLOR_YUV2RGB_NV12 / _I420), ``"bt601_full"``,
    ``"bt709_limited"``, ``"bt709_full"``. layout is src's; dst is always HWC.
    """
    fn = "cvt_color"
    c = _code(fn, "code", code, _COLOR, COLOR_CODES)
    y = _code(fn, "yuv", yuv, _YUV, YUV_MATRICES)
    lay = _layout(fn, "layout", layout, _LAYOUT)
    si = Image()
    if c in _YUV_CODES:
        if lay != _NV12 and lay != _I420:
            raise _bad(fn, f"code {code!r} reads an NV12 or I420 frame: pass layout='NV12' or 'I420' (layout is "
                           f"{layout!r})")
        _describe_yuv(fn, "src", src, lay, si)
    else:
        if lay == _NV12 or lay == _I420:
            raise _bad(fn, f"layout {layout!r} is a YUV frame, which only code 'yuv2rgb' or 'yuv2bgr' reads")
        si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, _HWC)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_cvt_color(s._h, byref(si), byref(di), c, y))
    src.stream = dst.stream = s


# ---- values and layout -------------------------------------------------------------


def convert(src: Tensor, dst: Tensor, scale: float = 1.0, offset: float = 0.0, *, stream: Stream | None = None,
            layout: str = "HWC") -> None:
    """dst = saturate(src * scale + offset) in dst's dtype, rounding to nearest even
    for integer dsts (``src.convertTo(dst, dtype, scale, offset)``). Any dtype pair;
    same layout and shape. float32 <-> float16 with scale 1 and offset 0 is a plain
    conversion."""
    fn = "convert"
    a, b = _real(fn, "scale", scale), _real(fn, "offset", offset)
    lay = _layout(fn, "layout", layout)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_convert(s._h, byref(si), byref(di), a, b))
    src.stream = dst.stream = s


def normalize(src: Tensor, dst: Tensor, scale: float = 1.0, mean: Floats = 0.0, std: Floats = 1.0, *,
              stream: Stream | None = None, layout: str = "HWC") -> None:
    """dst(c) = (src(c) * scale - mean[c]) / std[c] per channel, dst float32 or
    float16, same layout and shape (torchvision's ``Normalize`` after ``ToTensor``
    with scale 1/255; ``(src * scale - mean) / std`` in numpy; OpenCV has no single
    call). mean and std: a number for every channel, or one value per channel; every
    std non-zero."""
    # The per-request path of services: tensors seen before, the same mean and std
    # (cached descriptors and arrays); anything else takes the checked path below.
    if type(stream) is Stream and type(src) is Tensor and type(dst) is Tensor and layout == "HWC" \
            and type(mean) is tuple and type(std) is tuple and not dst.read_only:
        simgs, dimgs = src._images, dst._images
        if simgs is not None and dimgs is not None:
            si, di = simgs.get(_HWC), dimgs.get(_HWC)
            if si is not None and di is not None:
                try:
                    mv, sv = _channel_arrays.get((mean, si.channels)), _channel_arrays.get((std, si.channels))
                except TypeError:
                    mv = sv = None
                if mv is not None and sv is not None and type(scale) in (float, int):
                    _check(_normalize(stream._h, si, di, scale, mv, sv))
                    src.stream = dst.stream = stream
                    return
    fn = "normalize"
    a = _real(fn, "scale", scale)
    lay = _layout(fn, "layout", layout)
    si = _describe(fn, "src", src, lay)
    di = _describe(fn, "dst", dst, lay)
    _writable(fn, dst)
    # C reads src.channels values from each pointer: their length is checked here.
    mv = _per_channel(fn, "mean", mean, si.channels)
    sv = _per_channel(fn, "std", std, si.channels)
    s = _stream(fn, stream, src)
    _check(_normalize(s._h, byref(si), byref(di), a, mv, sv))
    src.stream = dst.stream = s


def reformat(src: Tensor, dst: Tensor, *, src_layout: str = "HWC", dst_layout: str | None = None,
             stream: Stream | None = None) -> None:
    """dst = src with its layout changed, HWC <-> CHW (NHWC <-> NCHW): the same
    dtype, size and channels (``np.transpose(src, (0, 3, 1, 2))``; ``cv2.split`` /
    ``cv2.merge``). dst_layout defaults to the other layout than src_layout."""
    fn = "reformat"
    sl = _layout(fn, "src_layout", src_layout)
    dl = (_CHW if sl == _HWC else _HWC) if dst_layout is None else _layout(fn, "dst_layout", dst_layout)
    si = _describe(fn, "src", src, sl)
    di = _describe(fn, "dst", dst, dl)
    _writable(fn, dst)
    s = _stream(fn, stream, src)
    _check(_reformat(s._h, byref(si), byref(di)))
    src.stream = dst.stream = s


# ---- the fused preprocess ----------------------------------------------------------


def _params(fn: str, interp: Any, swap_rb: Any, scale: Any, mean: Any, std: Any) -> PreprocessParams:
    p = PreprocessParams()
    p.interp = _code(fn, "interp", interp, _INTERP, INTERPS)
    p.swap_rb = 1 if swap_rb else 0
    p.scale = _real(fn, "scale", scale)
    for arg, value, pad, field in (("mean", mean, 0.0, p.mean), ("std", std, 1.0, p.std)):
        vals = _floats(fn, arg, value)
        if len(vals) == 1:
            vals *= 3
        elif len(vals) != 3:
            raise _bad(fn, f"{arg} has {len(vals)} values: give 3 (one per output channel) or a single number")
        field[0], field[1], field[2], field[3] = vals[0], vals[1], vals[2], pad
    return p


def preprocess(src: Tensor, dst: Tensor, rois: Rois = None, *, interp: str = "linear", swap_rb: bool = False,
               scale: float = 1 / 255, mean: Floats = IMAGENET_MEAN, std: Floats = IMAGENET_STD,
               dst_layout: str = "CHW", stream: Stream | None = None) -> None:
    """The fused preprocess of inference pipelines, in one pass and one launch:
    image i of dst = normalize(swap(resize(rois[i] of image i of src))), with
    out = (v * scale - mean[c]) / std[c].

    The OpenCV chain it replaces: ``cv2.resize(crop.astype(np.float32), (W, H),
    interpolation=...)``, then ``[..., ::-1]`` when swap_rb, ``(v * scale - mean) /
    std`` and a transpose to CHW. The resize is computed in float from the uint8
    source, not rounded to uint8 first. src: uint8 HWC ``[N, H, W, C]`` (or one
    image) with 3 or 4 channels (alpha dropped); dst: float32 or float16 with 3
    channels in dst_layout (``"CHW"``: ``[N, 3, H, W]``, or ``"HWC"``). interp:
    ``"linear"`` or ``"area"``. rois as :func:`crop_resize`. mean, std: 3 values or
    one number; the defaults are torchvision's ImageNet ones.
    """
    fn = "preprocess"
    p = _params(fn, interp, swap_rb, scale, mean, std)
    dl = _layout(fn, "dst_layout", dst_layout)
    si = _describe(fn, "src", src, _HWC)
    di = _describe(fn, "dst", dst, dl)
    _writable(fn, dst)
    r = _rects(fn, rois, [(si.width, si.height)] * si.batch) if rois is not None else None
    s = _stream(fn, stream, src)
    _check(_preprocess(s._h, byref(si), r, byref(di), byref(p)))
    src.stream = dst.stream = s


def preprocess_varshape(srcs: Sequence[Tensor], dst: Tensor, rois: Rois = None, *, interp: str = "linear",
                        swap_rb: bool = False, scale: float = 1 / 255, mean: Floats = IMAGENET_MEAN,
                        std: Floats = IMAGENET_STD, dst_layout: str = "CHW", stream: Stream | None = None) -> None:
    """:func:`preprocess` over a variable-size batch: image i of dst comes from
    srcs[i] (single uint8 HWC images of any sizes, all with the same channel count),
    in one launch. The stream defaults to the one ``srcs[0]`` last used."""
    fn = "preprocess_varshape"
    p = _params(fn, interp, swap_rb, scale, mean, std)
    dl = _layout(fn, "dst_layout", dst_layout)
    srcs, imgs = _describe_all(fn, srcs, _HWC)
    n = len(srcs)
    di = _describe(fn, "dst", dst, dl)
    _writable(fn, dst)
    r = _rects(fn, rois, [(im.width, im.height) for im in imgs]) if rois is not None else None
    s = _stream(fn, stream, srcs[0])
    _check(_preprocess_varshape(s._h, imgs, n, r, byref(di), byref(p)))
    for t in srcs:
        t.stream = s
    dst.stream = s
