"""The ctypes binding of libgaio: where the library is found, its structs, and the
prototypes of every function the package calls.

The library is looked up in this order: the ``GAIO_LIBRARY`` environment variable
(a path to ``libgaio.so``, e.g. in a CMake build tree), the copy bundled in the
installed package (``gaio/lib/``), then the system's library path.

ctypes releases the GIL around every call into libgaio, so a blocking call
(``gaio_future_wait``, ``gaio_cq_wait``) never holds up other Python threads, and no
Python thread ever holds the GIL while it waits inside gaio.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_int32, c_int64, c_size_t,
                    c_uint, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)
from pathlib import Path

__all__ = ["lib", "library_path"]


def _find() -> str:
    env = os.environ.get("GAIO_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise ImportError(f"GAIO_LIBRARY is {env!r}, which does not exist")
        return env
    here = Path(__file__).resolve().parent / "lib"
    for name in ("libgaio.so", "libgaio.so.0"):
        if (here / name).exists():
            return str(here / name)
    found = ctypes.util.find_library("gaio")
    if found:
        return found
    raise ImportError("libgaio.so not found: install the package with `pip install .`, or set GAIO_LIBRARY to "
                      "the path of libgaio.so (e.g. build/src/libgaio.so in a CMake build tree)")


library_path = _find()
lib = ctypes.CDLL(library_path)

# ---- structs (gaio/*.h) --------------------------------------------------------


class DeviceProps(Structure):
    _fields_ = [("kind", c_int), ("ordinal", c_int), ("name", c_char * 128), ("total_memory", c_uint64),
                ("compute_major", c_int), ("compute_minor", c_int), ("processor_count", c_int),
                ("max_priority", c_int), ("pitch_alignment", c_size_t)]


class Config(Structure):
    _fields_ = [("cpu_workers", c_int), ("wait_policy", c_int)]


class ContextOptions(Structure):
    _fields_ = [("pool_release_threshold", c_size_t), ("rng_seed", c_uint64)]


class PoolStats(Structure):
    _fields_ = [("bytes_in_use", c_size_t), ("bytes_cached", c_size_t), ("allocations", c_uint64),
                ("reuses", c_uint64)]


class CqEntry(Structure):
    _fields_ = [("user_data", c_void_p), ("status", c_int)]


class Image(Structure):
    _fields_ = [("buffer", c_void_p), ("offset", c_size_t), ("dtype", c_int), ("layout", c_int), ("batch", c_int32),
                ("width", c_int32), ("height", c_int32), ("channels", c_int32), ("row_pitch", c_size_t),
                ("plane_pitch", c_size_t), ("image_stride", c_size_t)]


class Rect(Structure):
    _fields_ = [("x", c_int32), ("y", c_int32), ("width", c_int32), ("height", c_int32)]


class PreprocessParams(Structure):
    _fields_ = [("interp", c_int), ("swap_rb", c_int32), ("scale", c_float), ("mean", c_float * 4),
                ("std", c_float * 4)]


MAX_NDIM = 8


class DlpackView(Structure):
    _fields_ = [("buffer", c_void_p), ("offset", c_size_t), ("dtype", c_int), ("ndim", c_int32),
                ("shape", c_int64 * MAX_NDIM), ("strides", c_int64 * MAX_NDIM), ("read_only", c_int32)]


# DLPack 1.1 (gaio/dlpack.h)
class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, c_void_p)


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p), ("deleter", DELETER), ("flags", c_uint64),
                ("dl_tensor", DLTensor)]


# ---- prototypes -------------------------------------------------------------------

_P = c_void_p  # every handle
_PP = POINTER(c_void_p)
_S = c_int  # gaio_status

_PROTOTYPES = {
    "gaio_status_string": (c_char_p, [c_int]),
    "gaio_last_error": (c_char_p, []),
    "gaio_version": (c_int, []),
    "gaio_configure": (_S, [POINTER(Config)]),
    "gaio_shutdown": (_S, []),
    "gaio_device_count": (_S, [POINTER(c_int)]),
    "gaio_backend_status": (_S, [c_int, POINTER(c_char_p)]),
    "gaio_device_get_props": (_S, [c_int, POINTER(DeviceProps)]),
    "gaio_context_create": (_S, [c_int, POINTER(ContextOptions), _PP]),
    "gaio_context_release": (_S, [_P]),
    "gaio_context_device": (_S, [_P, POINTER(c_int)]),
    "gaio_context_default_stream": (_S, [_P, _PP]),
    "gaio_context_synchronize": (_S, [_P]),
    "gaio_context_trim": (_S, [_P, c_size_t]),
    "gaio_context_pool_stats": (_S, [_P, c_int, POINTER(PoolStats)]),
    "gaio_stream_create": (_S, [_P, c_int, c_uint, _PP]),
    "gaio_stream_wrap": (_S, [_P, c_void_p, c_uint, _PP]),
    "gaio_stream_retain": (_S, [_P]),
    "gaio_stream_release": (_S, [_P]),
    "gaio_stream_native": (_S, [_P, _PP]),
    "gaio_stream_priority": (_S, [_P, POINTER(c_int)]),
    "gaio_stream_flags": (_S, [_P, POINTER(c_uint)]),
    "gaio_stream_query": (_S, [_P]),
    "gaio_stream_synchronize": (_S, [_P]),
    "gaio_event_create": (_S, [_P, c_uint, _PP]),
    "gaio_event_release": (_S, [_P]),
    "gaio_event_record": (_S, [_P, _P]),
    "gaio_stream_wait_event": (_S, [_P, _P]),
    "gaio_event_query": (_S, [_P]),
    "gaio_event_synchronize": (_S, [_P]),
    "gaio_event_elapsed_ms": (_S, [_P, _P, POINTER(c_float)]),
    "gaio_buffer_alloc": (_S, [_P, c_int, c_size_t, _PP]),
    "gaio_buffer_alloc_async": (_S, [_P, c_int, c_size_t, _PP]),
    "gaio_buffer_wrap": (_S, [_P, c_int, c_void_p, c_size_t, c_void_p, c_void_p, _PP]),
    "gaio_buffer_retain": (_S, [_P]),
    "gaio_buffer_release": (_S, [_P]),
    "gaio_buffer_size": (_S, [_P, POINTER(c_size_t)]),
    "gaio_buffer_kind": (_S, [_P, POINTER(c_int)]),
    "gaio_buffer_device": (_S, [_P, POINTER(c_int)]),
    "gaio_buffer_device_ptr": (_S, [_P, _PP]),
    "gaio_buffer_host_ptr": (_S, [_P, _PP]),
    "gaio_memcpy_async": (_S, [_P, _P, c_size_t, _P, c_size_t, c_size_t]),
    "gaio_memcpy_2d_async": (_S, [_P, _P, c_size_t, c_size_t, _P, c_size_t, c_size_t, c_size_t, c_size_t]),
    "gaio_memset_async": (_S, [_P, _P, c_size_t, c_int, c_size_t]),
    "gaio_future_fence": (_S, [_P, _PP]),
    "gaio_future_from_event": (_S, [_P, _PP]),
    "gaio_future_join": (_S, [_PP, c_size_t, _PP]),
    "gaio_future_retain": (_S, [_P]),
    "gaio_future_release": (_S, [_P]),
    "gaio_future_wait": (_S, [_P, c_int64]),
    "gaio_future_poll": (_S, [_P]),
    "gaio_future_message": (c_char_p, [_P]),
    "gaio_cq_create": (_S, [_PP]),
    "gaio_cq_release": (_S, [_P]),
    "gaio_cq_fd": (_S, [_P, POINTER(c_int)]),
    "gaio_cq_add": (_S, [_P, _P, c_void_p]),
    "gaio_cq_pop": (_S, [_P, POINTER(CqEntry), c_size_t, POINTER(c_size_t)]),
    "gaio_cq_wait": (_S, [_P, POINTER(CqEntry), c_size_t, POINTER(c_size_t), c_int64]),
    "gaio_dtype_size": (c_size_t, [c_int]),
    "gaio_image_check": (_S, [POINTER(Image), POINTER(Image), POINTER(c_size_t)]),
    "gaio_dlpack_export": (_S, [POINTER(DlpackView), _PP]),
    "gaio_dlpack_export_legacy": (_S, [POINTER(DlpackView), _PP]),
    "gaio_dlpack_import_deferred": (_S, [_P, c_void_p, POINTER(DlpackView), _PP]),
    "gaio_dlpack_import_legacy_deferred": (_S, [_P, c_void_p, POINTER(DlpackView), _PP]),
    "gaio_dlpack_view_from_image": (_S, [POINTER(Image), POINTER(DlpackView)]),
    "gaio_dlpack_view_to_image": (_S, [POINTER(DlpackView), c_int, POINTER(Image)]),
    # image ops (gaio/image.h)
    "gaio_resize": (_S, [_P, POINTER(Image), POINTER(Image), c_int]),
    "gaio_crop_resize": (_S, [_P, POINTER(Image), POINTER(Rect), POINTER(Image), c_int]),
    "gaio_crop_resize_varshape": (_S, [_P, POINTER(Image), c_int32, POINTER(Rect), POINTER(Image), c_int]),
    "gaio_crop": (_S, [_P, POINTER(Image), Rect, POINTER(Image)]),
    "gaio_copy_make_border": (_S, [_P, POINTER(Image), POINTER(Image), c_int32, c_int32, c_int, POINTER(c_float)]),
    "gaio_flip": (_S, [_P, POINTER(Image), POINTER(Image), c_int]),
    "gaio_rotate": (_S, [_P, POINTER(Image), POINTER(Image), c_int32]),
    "gaio_warp_affine": (_S, [_P, POINTER(Image), POINTER(Image), POINTER(c_double), c_int, c_uint,
                              POINTER(c_float)]),
    "gaio_cvt_color": (_S, [_P, POINTER(Image), POINTER(Image), c_int, c_int]),
    "gaio_convert": (_S, [_P, POINTER(Image), POINTER(Image), c_double, c_double]),
    "gaio_normalize": (_S, [_P, POINTER(Image), POINTER(Image), c_float, POINTER(c_float), POINTER(c_float)]),
    "gaio_reformat": (_S, [_P, POINTER(Image), POINTER(Image)]),
    "gaio_preprocess": (_S, [_P, POINTER(Image), POINTER(Rect), POINTER(Image), POINTER(PreprocessParams)]),
    "gaio_preprocess_varshape": (_S, [_P, POINTER(Image), c_int32, POINTER(Rect), POINTER(Image),
                                      POINTER(PreprocessParams)]),
}

for _name, (_res, _args) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

INFINITE = (1 << 63) - 1

# ---- models (gaio/model.h, gaio/dnn.h's gaio_tensor) ------------------------------
# Kept apart so that a libgaio built before models still loads: a missing symbol is
# left undeclared here and gaio.Model says so when used.

MODEL_MAX_NDIM = 8
TENSOR_MAX_NDIM = 5


class TensorDesc(Structure):
    """gaio_tensor (gaio/dnn.h)."""
    _fields_ = [("buffer", c_void_p), ("offset", c_size_t), ("dtype", c_int), ("ndim", c_int32),
                ("shape", c_int64 * TENSOR_MAX_NDIM), ("strides", c_int64 * TENSOR_MAX_NDIM), ("layout", c_int)]


class ModelIo(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("ndim", c_int32), ("shape", c_int64 * MODEL_MAX_NDIM),
                ("dim_names", c_char_p * MODEL_MAX_NDIM)]


class ModelSummary(Structure):
    _fields_ = [("ir_version", c_int64), ("opset", c_int64), ("inputs", c_int32), ("outputs", c_int32),
                ("nodes", c_int32), ("initializers", c_int32), ("weight_bytes", c_size_t), ("producer", c_char_p)]


class ModelOperator(Structure):
    _fields_ = [("name", c_char_p), ("first_opset", c_int32), ("last_opset", c_int32), ("folds_only", c_int32)]


class ModelExecOptions(Structure):
    _fields_ = [("batch", c_int64), ("precision", c_int), ("layout", c_int)]


_MODEL_PROTOTYPES = {
    "gaio_model_load": (_S, [c_char_p, _PP]),
    "gaio_model_load_memory": (_S, [c_void_p, c_size_t, _PP]),
    "gaio_model_retain": (_S, [_P]),
    "gaio_model_release": (_S, [_P]),
    "gaio_model_summarize": (_S, [_P, POINTER(ModelSummary)]),
    "gaio_model_input": (_S, [_P, c_int32, POINTER(ModelIo)]),
    "gaio_model_output": (_S, [_P, c_int32, POINTER(ModelIo)]),
    "gaio_model_node": (_S, [_P, c_int32, POINTER(c_char_p), POINTER(c_char_p)]),
    "gaio_model_operator_info": (_S, [c_int32, POINTER(ModelOperator)]),
    "gaio_model_exec_create_ex": (_S, [_P, _P, POINTER(ModelExecOptions), _PP]),
    "gaio_model_exec_create": (_S, [_P, _P, c_int64, _PP]),
    "gaio_model_exec_release": (_S, [_P]),
    "gaio_model_run": (_S, [_P, _P, POINTER(TensorDesc), c_int32, POINTER(TensorDesc), c_int32, _PP]),
}

def _declare_optional(prototypes) -> bool:
    """Declares each function the loaded libgaio has; whether it has them all."""
    have = True
    for name, (res, args) in prototypes.items():
        f = getattr(lib, name, None)
        if f is None:
            have = False
            continue
        f.restype = res
        f.argtypes = args
    return have


HAS_MODELS = _declare_optional(_MODEL_PROTOTYPES)

# Engines (gaio_engine_*): a libgaio with models but built before engines still loads;
# HAS_ENGINES is False there and gaio.Engine says so when used (Model.exec keeps working
# through gaio_model_exec_create_ex).


class EngineShape(Structure):
    """gaio_engine_shape."""
    _fields_ = [("name", c_char_p), ("ndim", c_int32), ("dims", c_int64 * MODEL_MAX_NDIM),
                ("min_dims", c_int64 * MODEL_MAX_NDIM), ("max_dims", c_int64 * MODEL_MAX_NDIM)]


class EngineOptions(Structure):
    """gaio_engine_options."""
    _fields_ = [("batch", c_int64), ("precision", c_int), ("layout", c_int), ("shapes", POINTER(EngineShape)),
                ("nshapes", c_int32), ("flags", c_uint32)]


class EngineInfo(Structure):
    """gaio_engine_info."""
    _fields_ = [("batch", c_int64), ("dtype", c_int), ("layout", c_int), ("weight_bytes", c_size_t),
                ("arena_bytes", c_size_t), ("nodes", c_int32), ("steps", c_int32), ("folded_bn", c_int32),
                ("fused_add", c_int32), ("fused_act", c_int32), ("convs", c_int32), ("cuda_graph", c_int32),
                ("loaded", c_int32), ("build_seconds", c_double), ("f16_accumulation", c_int32)]


class EngineStep(Structure):
    """gaio_engine_step."""
    _fields_ = [("name", c_char_p), ("ops", c_char * 96), ("kernel", c_char * 96)]


ENGINE_NO_TUNE = 1 << 0
ENGINE_NO_CUDA_GRAPH = 1 << 1

_ENGINE_PROTOTYPES = {
    "gaio_engine_build": (_S, [_P, _P, POINTER(EngineOptions), _PP]),
    "gaio_engine_build_async": (_S, [_P, _P, POINTER(EngineOptions), _PP, _PP]),
    "gaio_engine_retain": (_S, [_P]),
    "gaio_engine_release": (_S, [_P]),
    "gaio_engine_get_info": (_S, [_P, POINTER(EngineInfo)]),
    "gaio_engine_model": (_S, [_P, _PP]),
    "gaio_engine_input": (_S, [_P, c_int32, POINTER(ModelIo)]),
    "gaio_engine_output": (_S, [_P, c_int32, POINTER(ModelIo)]),
    "gaio_engine_get_step": (_S, [_P, c_int32, POINTER(EngineStep)]),
    "gaio_engine_save": (_S, [_P, c_char_p]),
    "gaio_engine_load": (_S, [c_char_p, _P, _PP]),
    "gaio_engine_load_memory": (_S, [c_void_p, c_size_t, _P, _PP]),
    "gaio_engine_create_exec": (_S, [_P, _PP]),
    "gaio_model_exec_engine": (_S, [_P, _PP]),
    "gaio_model_exec_set_shapes": (_S, [_P, POINTER(EngineShape), c_int32]),
    "gaio_model_exec_input": (_S, [_P, c_int32, POINTER(ModelIo)]),
    "gaio_model_exec_output": (_S, [_P, c_int32, POINTER(ModelIo)]),
}

HAS_ENGINES = _declare_optional(_ENGINE_PROTOTYPES) and HAS_MODELS
# ---- end of models -----------------------------------------------------------------
