/* Image descriptors: packed strides, explicit strides, ROI and batch views, and
 * every way a descriptor can be wrong (each named in the message). Also the worker
 * pool's parallel-for that host image kernels split their work with. */
#include <stdatomic.h>

#include "common.h"
#include "image/image_test.h"

/* Internal: the worker pool's parallel-for (src/core/workers.h). */
typedef void (*gaio_range_fn)(void *arg, size_t begin, size_t end);
void gaio__parallel_for(size_t n, size_t grain, gaio_range_fn fn, void *arg);

#define BAD(call, needle) EXPECT_INVALID(call, "gaio_image_", needle)

static void packed_strides(gaio_buffer *buf) {
    gaio_image r;
    size_t bytes;
    gaio_image im = gaio_image_make(buf, 0, GAIO_DTYPE_F32, GAIO_LAYOUT_HWC, 2, 5, 3, 3);
    OK(gaio_image_check(&im, &r, &bytes));
    CHECK(r.row_pitch == 5 * 3 * 4 && r.plane_pitch == 0 && r.image_stride == 5 * 3 * 4 * 3);
    CHECK(bytes == 2 * 5 * 3 * 3 * 4);

    im = gaio_image_make(buf, 8, GAIO_DTYPE_U16, GAIO_LAYOUT_CHW, 3, 7, 4, 2);
    OK(gaio_image_check(&im, &r, &bytes));
    CHECK(r.row_pitch == 14 && r.plane_pitch == 14 * 4 && r.image_stride == 14 * 4 * 2 && bytes == 3 * 14 * 4 * 2);

    im = gaio_image_make(buf, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_NV12, 2, 6, 4, 3);
    OK(gaio_image_check(&im, &r, &bytes));
    CHECK(r.row_pitch == 6 && r.plane_pitch == 24 && r.image_stride == 36 && bytes == 72);

    im = gaio_image_make(buf, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_I420, 1, 8, 4, 3);
    OK(gaio_image_check(&im, &r, &bytes));
    CHECK(r.plane_pitch == 32 && bytes == 48); /* Y 32, U 8, V 8 */
}

static void explicit_strides(gaio_buffer *buf) {
    gaio_image im = gaio_image_make(buf, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 2, 10, 4, 3);
    im.row_pitch = 64;
    im.image_stride = 300;
    size_t bytes;
    OK(gaio_image_check(&im, NULL, &bytes));
    CHECK(bytes == 300 + 64 * 3 + 30); /* the last row ends at its last pixel */

    /* ROI views: no copy, same strides, offset moved to the ROI's first pixel */
    gaio_image v;
    OK(gaio_image_roi(&im, (gaio_rect){2, 1, 5, 3}, &v));
    CHECK(v.offset == 64 + 2 * 3 && v.width == 5 && v.height == 3 && v.row_pitch == 64 && v.image_stride == 300);
    gaio_image c = gaio_image_make(buf, 0, GAIO_DTYPE_F32, GAIO_LAYOUT_CHW, 1, 8, 8, 3);
    OK(gaio_image_roi(&c, (gaio_rect){1, 2, 3, 4}, &v));
    CHECK(v.offset == 2 * 32 + 4 && v.plane_pitch == 256 && v.row_pitch == 32);
    OK(gaio_image_at(&im, 1, &v));
    CHECK(v.batch == 1 && v.offset == 300);
}

static void bad_descriptors(gaio_buffer *buf, size_t size) {
    gaio_image ok = gaio_image_make(buf, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, 8, 8, 3), im;
    gaio_image v;
    BAD(gaio_image_check(NULL, NULL, NULL), "img is NULL");
    im = ok, im.buffer = NULL;
    BAD(gaio_image_check(&im, NULL, NULL), "buffer is NULL");
    im = ok, im.dtype = (gaio_dtype)9;
    BAD(gaio_image_check(&im, NULL, NULL), "dtype");
    im = ok, im.layout = (gaio_layout)0;
    BAD(gaio_image_check(&im, NULL, NULL), "layout");
    im = ok, im.width = 0;
    BAD(gaio_image_check(&im, NULL, NULL), "0x8");
    im = ok, im.height = -3;
    BAD(gaio_image_check(&im, NULL, NULL), "8x-3");
    im = ok, im.batch = 0;
    BAD(gaio_image_check(&im, NULL, NULL), "batch");
    im = ok, im.channels = 0;
    BAD(gaio_image_check(&im, NULL, NULL), "channels");
    im = ok, im.row_pitch = 23;
    BAD(gaio_image_check(&im, NULL, NULL), "row_pitch");
    im = ok, im.dtype = GAIO_DTYPE_F32, im.row_pitch = 98;
    BAD(gaio_image_check(&im, NULL, NULL), "row_pitch");
    im = ok, im.dtype = GAIO_DTYPE_U16, im.offset = 3;
    BAD(gaio_image_check(&im, NULL, NULL), "offset");
    im = ok, im.batch = 2, im.image_stride = 100;
    BAD(gaio_image_check(&im, NULL, NULL), "image_stride");
    im = ok, im.layout = GAIO_LAYOUT_CHW, im.plane_pitch = 60;
    BAD(gaio_image_check(&im, NULL, NULL), "plane_pitch");
    im = ok, im.layout = GAIO_LAYOUT_NV12, im.width = 7;
    BAD(gaio_image_check(&im, NULL, NULL), "even");
    im = ok, im.layout = GAIO_LAYOUT_NV12, im.dtype = GAIO_DTYPE_U16;
    BAD(gaio_image_check(&im, NULL, NULL), "u8");
    /* one byte too many for the buffer, and an offset past its end */
    im = gaio_image_make(buf, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, (int32_t)size + 1, 1, 1);
    BAD(gaio_image_check(&im, NULL, NULL), "buffer holds");
    im = ok, im.offset = size;
    BAD(gaio_image_check(&im, NULL, NULL), "buffer holds");
    im = ok, im.batch = 0x7fffffff, im.width = 1 << 20, im.height = 1 << 20;
    BAD(gaio_image_check(&im, NULL, NULL), "buffer holds"); /* sizes near overflow */
    BAD(gaio_image_roi(&ok, (gaio_rect){5, 0, 4, 2}, &v), "roi");
    BAD(gaio_image_roi(&ok, (gaio_rect){0, 0, 0, 2}, &v), "roi");
    BAD(gaio_image_roi(&ok, (gaio_rect){-1, 0, 2, 2}, &v), "roi");
    BAD(gaio_image_roi(&ok, (gaio_rect){0, 0, 2, 2}, NULL), "view");
    BAD(gaio_image_at(&ok, 1, &v), "index");
    CHECK(gaio_dtype_size(GAIO_DTYPE_F16) == 2 && !strcmp(gaio_dtype_name(GAIO_DTYPE_S16), "s16"));
    CHECK(gaio_dtype_size((gaio_dtype)77) == 0);
}

/* ---- parallel-for: every index exactly once, from many threads at once ---- */

typedef struct pf_arg {
    atomic_uchar *hits;
    atomic_int calls;
} pf_arg;

static void pf_body(void *arg, size_t b, size_t e) {
    pf_arg *a = arg;
    atomic_fetch_add(&a->calls, 1);
    for (size_t i = b; i < e; i++) atomic_fetch_add(&a->hits[i], 1);
}

static gaio_status pf_kernel(const gaio_launch_info *info, void *const *args) {
    (void)info;
    size_t n;
    memcpy(&n, args[0], sizeof n);
    pf_arg a = {calloc(n, 1), 0};
    CHECK(a.hits);
    gaio__parallel_for(n, 3, pf_body, &a);
    gaio_status st = GAIO_OK;
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&a.hits[i]) != 1) st = GAIO_ERR_USER;
    free(a.hits);
    return st;
}

static void parallel_for(gaio_context *ctx) {
    static const size_t sizes[] = {sizeof(size_t)};
    gaio_kernel *k;
    OK(gaio_kernel_register("test_parallel_for", pf_kernel, 1, sizes, &k));
    /* as many streams as a busy pool has: each kernel splits while others do too */
    enum { STREAMS = 6 };
    gaio_stream *s[STREAMS];
    for (int i = 0; i < STREAMS; i++) OK(gaio_stream_create(ctx, 0, 0, &s[i]));
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < STREAMS; i++) {
            size_t n = (size_t)(1 + round * 997 + i * 31);
            gaio_arg a = GAIO_ARG(n);
            OK(gaio_launch(s[i], k, (gaio_dim3){1, 1, 1}, (gaio_dim3){1, 1, 1}, 0, &a, 1));
        }
    for (int i = 0; i < STREAMS; i++) {
        OK(gaio_stream_synchronize(s[i])); /* a kernel that saw an index twice or never fails its stream */
        OK(gaio_stream_release(s[i]));
    }
    OK(gaio_kernel_release(k));
    OK(gaio_kernel_unregister("test_parallel_for"));
}

static void run(int device) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    enum { SIZE = 4096 };
    gaio_buffer *buf;
    OK(gaio_buffer_alloc(ctx, GAIO_MEM_DEVICE, SIZE, &buf));
    packed_strides(buf);
    explicit_strides(buf);
    bad_descriptors(buf, SIZE);
    if (device == 0) parallel_for(ctx);
    OK(gaio_buffer_release(buf));
    OK(gaio_context_release(ctx));
}
