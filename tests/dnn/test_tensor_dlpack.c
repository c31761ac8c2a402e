/* gaio_tensor_to_dlpack_view / gaio_tensor_from_dlpack_view: an NHWC tensor goes out
 * through a DLPack export and comes back through an import as the same logical NCHW
 * shape with channels-last strides (how PyTorch's channels_last tensors travel), and
 * an op on the imported tensor reads the elements the original holds: a gaio_cast to
 * NCHW checked against a direct transpose of random values. Bad input too. */
#include "common.h"

static void round_trip(gaio_context *ctx, gaio_stream *s, uint64_t *rng) {
    const int64_t shape[4] = {2, 3, 4, 5};
    const size_t n = 2 * 3 * 4 * 5;
    gaio_buffer *dev, *host_in, *host_out;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, n * 4 * 2, &dev));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * 4, &host_in));
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_PINNED, n * 4, &host_out));
    float *in, *out;
    OK(gaio_buffer_host_ptr(host_in, (void **)&in));
    OK(gaio_buffer_host_ptr(host_out, (void **)&out));
    for (size_t i = 0; i < n; i++) in[i] = (float)(test_rand(rng) % 2000) / 1000.0f - 0.999f;
    OK(gaio_memcpy_async(s, dev, 0, host_in, 0, n * 4));

    gaio_tensor nhwc = gaio_tensor_make(dev, 0, GAIO_DTYPE_F32, 4, shape, GAIO_TENSOR_NHWC);
    gaio_dlpack_view v;
    OK(gaio_tensor_to_dlpack_view(&nhwc, &v));
    CHECK(v.buffer == dev && v.ndim == 4 && v.dtype == GAIO_DTYPE_F32);
    const int64_t want_strides[4] = {60, 1, 15, 3}; /* N, C, H, W over memory N, H, W, C */
    for (int i = 0; i < 4; i++) CHECK(v.shape[i] == shape[i] && v.strides[i] == want_strides[i]);

    /* Out as a DLPack tensor and back in as another library's would come. */
    DLManagedTensorVersioned *dl = NULL;
    OK(gaio_dlpack_export(&v, &dl));
    gaio_dlpack_view back;
    OK(gaio_dlpack_import(ctx, dl, &back));
    gaio_tensor t;
    OK(gaio_tensor_from_dlpack_view(&back, &t));
    CHECK(t.ndim == 4 && t.dtype == GAIO_DTYPE_F32 && t.layout == GAIO_TENSOR_ROW_MAJOR);
    for (int i = 0; i < 4; i++) CHECK(t.shape[i] == shape[i] && t.strides[i] == want_strides[i]);

    /* NHWC memory read through the imported tensor, written NCHW. */
    gaio_tensor nchw = gaio_tensor_make(dev, n * 4, GAIO_DTYPE_F32, 4, shape, GAIO_TENSOR_ROW_MAJOR);
    OK(gaio_cast(s, &t, &nchw));
    OK(gaio_memcpy_async(s, host_out, 0, dev, n * 4, n * 4));
    OK(gaio_stream_synchronize(s));
    for (int64_t a = 0; a < 2; a++)
        for (int64_t c = 0; c < 3; c++)
            for (int64_t h = 0; h < 4; h++)
                for (int64_t w = 0; w < 5; w++) {
                    float want = in[((a * 4 + h) * 5 + w) * 3 + c];
                    CHECK(out[((a * 3 + c) * 4 + h) * 5 + w] == want);
                }
    OK(gaio_buffer_release(back.buffer));
    OK(gaio_buffer_release(host_in));
    OK(gaio_buffer_release(host_out));
    OK(gaio_buffer_release(dev));
}

static void bad_input(gaio_context *ctx) {
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, 4096, &buf));
    gaio_tensor t;
    gaio_dlpack_view v;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_tensor_from_dlpack_view(NULL, &t), "gaio_tensor_from_dlpack_view");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_tensor_to_dlpack_view(NULL, &v), "gaio_tensor_to_dlpack_view");
    /* Six dimensions: more than a tensor has. */
    const int64_t six[6] = {1, 2, 1, 2, 1, 2};
    v = gaio_dlpack_view_make(buf, 0, GAIO_DTYPE_F32, 6, six);
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_tensor_from_dlpack_view(&v, &t), "gaio_tensor_from_dlpack_view");
    CHECK(t.buffer == NULL);
    /* One element repeated along every dimension. */
    const int64_t two[2] = {3, 4};
    v = gaio_dlpack_view_make(buf, 0, GAIO_DTYPE_F32, 2, two);
    v.strides[0] = v.strides[1] = 0;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_tensor_from_dlpack_view(&v, &t), "gaio_tensor_from_dlpack_view");
    /* A view past its buffer's end. */
    v = gaio_dlpack_view_make(buf, 4080, GAIO_DTYPE_F32, 2, two);
    CHECK(gaio_tensor_from_dlpack_view(&v, &t) != GAIO_OK);
    /* A tensor past its buffer's end. */
    gaio_tensor big = gaio_tensor_make(buf, 0, GAIO_DTYPE_F32, 2, (int64_t[]){64, 64}, GAIO_TENSOR_ROW_MAJOR);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_tensor_to_dlpack_view(&big, &v), "gaio_tensor_to_dlpack_view");
    CHECK(v.buffer == NULL);
    OK(gaio_buffer_release(buf));
}

static void run(int device) {
    uint64_t rng = test_seed();
    gaio_context *ctx;
    gaio_stream *s;
    OK(gaio_context_create(device, NULL, &ctx));
    OK(gaio_stream_create(ctx, 0, 0, &s));
    round_trip(ctx, s, &rng);
    bad_input(ctx);
    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));
    test_shutdown();
}
