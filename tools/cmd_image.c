/* `gaio resize` and `gaio convert`.
 *
 * What the command line alone can tell is checked before any file is read, and the
 * input is read and recognised before a context is made, so a typo fails at once. Then: decode into a PINNED buffer, copy it to a DEVICE buffer
 * of the chosen device, run the op on a stream, copy the result to PINNED memory,
 * wait on a future fenced behind it, encode. */
#include "cmd_image.h"
#include "cli_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gaio/gaio.h"
#include "image_io.h"

/* gaio's largest image side (src/image/image.c); also keeps every sum below in int. */
#define MAX_SIDE (1 << 20)

/* ---- options ------------------------------------------------------------ */

typedef enum opt_id {
    O_DEVICE,
    O_QUALITY,
    O_QUIET,
    O_INTERP,
    O_OP,
    O_MODE,
    O_DEGREES,
    O_ROI,
    O_TOP,
    O_BOTTOM,
    O_LEFT,
    O_RIGHT,
    O_TYPE,
    O_VALUE,
    O_MATRIX,
    O_INVERSE,
    O_SIZE,
    O_SCALE,
    O_OFFSET,
    O_COUNT
} opt_id;

#define BIT(o) (1u << (o))
#define COMMON_OPTS (BIT(O_DEVICE) | BIT(O_QUALITY) | BIT(O_QUIET))

static const struct {
    const char *name;
    bool takes_value;
} opt_defs[O_COUNT] = {
    [O_DEVICE] = {"device", true}, [O_QUALITY] = {"quality", true}, [O_QUIET] = {"quiet", false},
    [O_INTERP] = {"interp", true}, [O_OP] = {"op", true},           [O_MODE] = {"mode", true},
    [O_DEGREES] = {"degrees", true}, [O_ROI] = {"roi", true},       [O_TOP] = {"top", true},
    [O_BOTTOM] = {"bottom", true}, [O_LEFT] = {"left", true},       [O_RIGHT] = {"right", true},
    [O_TYPE] = {"type", true},     [O_VALUE] = {"value", true},     [O_MATRIX] = {"matrix", true},
    [O_INVERSE] = {"inverse", false}, [O_SIZE] = {"size", true},    [O_SCALE] = {"scale", true},
    [O_OFFSET] = {"offset", true},
};

typedef enum op_kind {
    OP_RESIZE,
    OP_COPY,
    OP_FLIP,
    OP_ROTATE,
    OP_CROP,
    OP_BORDER,
    OP_WARP,
    OP_GRAY,
    OP_RGB,
    OP_RGBA,
    OP_SWAP_RB,
    OP_CONVERT
} op_kind;

static const struct {
    const char *name;
    op_kind kind;
    unsigned opts;     /* what it takes besides COMMON_OPTS and --op */
    unsigned required; /* of those, what it needs */
} convert_ops[] = {
    {"copy", OP_COPY, 0, 0},
    {"flip", OP_FLIP, BIT(O_MODE), BIT(O_MODE)},
    {"rotate", OP_ROTATE, BIT(O_DEGREES), BIT(O_DEGREES)},
    {"crop", OP_CROP, BIT(O_ROI), BIT(O_ROI)},
    {"border", OP_BORDER, BIT(O_TOP) | BIT(O_BOTTOM) | BIT(O_LEFT) | BIT(O_RIGHT) | BIT(O_TYPE) | BIT(O_VALUE), 0},
    {"warp-affine", OP_WARP, BIT(O_MATRIX) | BIT(O_INTERP) | BIT(O_INVERSE) | BIT(O_SIZE) | BIT(O_VALUE),
     BIT(O_MATRIX)},
    {"gray", OP_GRAY, 0, 0},
    {"rgb", OP_RGB, 0, 0},
    {"rgba", OP_RGBA, 0, 0},
    {"swap-rb", OP_SWAP_RB, 0, 0},
    {"convert", OP_CONVERT, BIT(O_SCALE) | BIT(O_OFFSET), 0},
};
#define N_CONVERT_OPS (sizeof convert_ops / sizeof convert_ops[0])

typedef struct name_value {
    const char *name;
    int value;
} name_value;

static const name_value interps[] = {
    {"nearest", GAIO_INTERP_NEAREST}, {"nearest-exact", GAIO_INTERP_NEAREST_EXACT}, {"linear", GAIO_INTERP_LINEAR},
    {"cubic", GAIO_INTERP_CUBIC},     {"area", GAIO_INTERP_AREA},                   {NULL, 0}};
static const name_value flips[] = {{"h", GAIO_FLIP_HORIZONTAL},
                                   {"horizontal", GAIO_FLIP_HORIZONTAL},
                                   {"v", GAIO_FLIP_VERTICAL},
                                   {"vertical", GAIO_FLIP_VERTICAL},
                                   {"both", GAIO_FLIP_BOTH},
                                   {NULL, 0}};
static const name_value borders[] = {
    {"constant", GAIO_BORDER_CONSTANT},      {"replicate", GAIO_BORDER_REPLICATE},
    {"reflect", GAIO_BORDER_REFLECT},        {"reflect101", GAIO_BORDER_REFLECT_101},
    {"reflect-101", GAIO_BORDER_REFLECT_101}, {"wrap", GAIO_BORDER_WRAP},
    {NULL, 0}};

static const char *name_of(const name_value *t, int value) {
    for (; t->name; t++)
        if (t->value == value) return t->name;
    return "?";
}

/* ---- the job ------------------------------------------------------------ */

typedef struct job {
    const char *cmd; /* "resize" or "convert" */
    const char *in, *out;
    const char *val[O_COUNT];
    bool set[O_COUNT];
    imgio_format out_format;
    int device; /* -1: the default */
    int quality;
    bool quiet;

    op_kind op;
    const char *op_name;
    gaio_interp interp;
    int width, height; /* resize; warp-affine with --size */
    gaio_flip_mode flip;
    int degrees;
    gaio_rect roi;
    int top, bottom, left, right;
    gaio_border border;
    float value[4];
    bool has_value;
    double matrix[6];
    double scale, offset;

    /* the run */
    imgio_file file;
    gaio_context *ctx;
    gaio_stream *stream;
    gaio_buffer *in_host, *in_dev, *out_dev, *out_host;
    gaio_future *done;
    char device_name[160];
    char alloc_err[512];
} job;

/* One line on stderr, however long or many-lined the parts are. */
static void eline(const job *j, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cli_veline(j->cmd, fmt, ap);
    va_end(ap);
}

#define USAGE(j, ...) (eline((j), __VA_ARGS__), 2)
#define FAIL(j, ...) (eline((j), __VA_ARGS__), 1)

/* A gaio call failed: its message names the function and the argument. */
static int gaio_failed(const job *j, gaio_status st, const char *call) {
    const char *why = gaio_last_error();
    if (why && *why) return FAIL(j, "%s (%s)", why, gaio_status_string(st));
    return FAIL(j, "%s failed: %s", call, gaio_status_string(st));
}

/* ---- value parsing ------------------------------------------------------ */

static bool parse_long(const char *s, long min, long max, long *out) {
    if (!s || !*s || !(*s == '-' || *s == '+' || (*s >= '0' && *s <= '9'))) return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, int min, int max, int *out) {
    long v;
    if (!parse_long(s, min, max, &v)) return false;
    *out = (int)v;
    return true;
}

static bool parse_double(const char *s, size_t len, double *out) {
    char buf[64];
    if (!len || len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    if (buf[0] == ' ' || buf[0] == '\t') return false;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

/* Comma-separated numbers: between min_n and max_n of them. */
static bool parse_list(const char *s, double *out, int min_n, int max_n, int *n) {
    int k = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (k == max_n || !parse_double(s, len, &out[k])) return false;
        k++;
        if (!comma) break;
        s = comma + 1;
    }
    if (k < min_n) return false;
    *n = k;
    return true;
}

/* "WxH", both sides in [1, MAX_SIDE]. */
static bool parse_size(const char *s, int *w, int *h) {
    const char *x = strchr(s, 'x');
    if (!x || x == s) return false;
    char buf[32];
    size_t len = (size_t)(x - s);
    if (len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    return parse_int(buf, 1, MAX_SIDE, w) && parse_int(x + 1, 1, MAX_SIDE, h);
}

static bool parse_name(const name_value *t, const char *s, int *out) {
    for (; t->name; t++)
        if (!strcmp(t->name, s)) {
            *out = t->value;
            return true;
        }
    return false;
}

/* ---- the command line --------------------------------------------------- */

/* lead: "  " in gaio help's list of commands, "usage: gaio " for the command's --help. */
static void usage_resize(FILE *out, const char *lead) {
    fprintf(out,
            "%sresize IN OUT WxH [--interp nearest|nearest-exact|linear|cubic|area] [common options]\n"
            "             resize an image to W x H (default --interp linear)\n",
            lead);
}

static void usage_convert(FILE *out, const char *lead) {
    fprintf(out,
            "%sconvert IN OUT [--op OP [op options]] [common options]\n"
            "             run one image op on an image; OP is one of\n"
            "               copy          no op: re-encode IN as OUT's format (the default)\n"
            "               flip          --mode h|v|both\n"
            "               rotate        --degrees 90|180|270 (clockwise)\n"
            "               crop          --roi X,Y,W,H\n"
            "               border        [--top T] [--bottom B] [--left L] [--right R]\n"
            "                             [--type constant|replicate|reflect|reflect101|wrap]\n"
            "                             [--value V[,V,V,V]] (constant's value: one for every\n"
            "                             channel, or one per channel; default 0)\n"
            "               warp-affine   --matrix A,B,C,D,E,F (src -> dst, row major) [--inverse]\n"
            "                             (the matrix maps dst -> src) [--interp nearest|linear]\n"
            "                             [--size WxH] (default: IN's size) [--value V[,V,V,V]]\n"
            "               gray          RGB(A) -> gray (BT.601)\n"
            "               rgb           gray or RGBA -> RGB\n"
            "               rgba          gray or RGB -> RGBA (opaque)\n"
            "               swap-rb       RGB <-> BGR (RGBA <-> BGRA)\n"
            "               convert       [--scale S] [--offset O]: saturate(v * S + O) in 8 bits\n",
            lead);
}

static void usage_common(FILE *out) {
    fprintf(out,
            "             Files: PNG (8-bit gray, gray+alpha, RGB, RGBA, palette; 16-bit read as 8)\n"
            "             and JPEG (gray, RGB), known by their contents when read and by OUT's\n"
            "             extension (.png, .jpg, .jpeg) when written; JPEG drops alpha.\n"
            "             common options:\n"
            "               --device N    0 = the host CPU, 1.. = CUDA GPUs (default: the first\n"
            "                             GPU if any, else 0; see gaio info)\n"
            "               --quality Q   JPEG quality 1..100 (default 95)\n"
            "               -q, --quiet   no summary line on success\n");
}

void gaio_cmd_image_usage(FILE *out) {
    usage_resize(out, "  ");
    usage_convert(out, "  ");
    usage_common(out);
}

static bool takes(unsigned opts, int o) { return (opts >> o) & 1u; }

static int parse_args(job *j, int argc, char **argv, unsigned allowed, int npos, const char **pos) {
    int n = 0;
    bool only_pos = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == 0) {
            if (n == npos)
                return USAGE(j, "unexpected argument '%s' (usage: gaio %s %s; see gaio help)", a, j->cmd,
                             npos == 3 ? "IN OUT WxH [options]" : "IN OUT [--op OP] [options]");
            pos[n++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            !strcmp(j->cmd, "resize") ? usage_resize(stdout, "usage: gaio ") : usage_convert(stdout, "usage: gaio ");
            usage_common(stdout);
            return -1;
        }
        const char *name = a + 2, *eq = NULL;
        size_t len;
        if (!strcmp(a, "-q")) {
            name = "quiet";
            len = 5;
        } else if (a[1] != '-') {
            return USAGE(j, "unknown option '%s' (see gaio help)", a);
        } else {
            eq = strchr(name, '=');
            len = eq ? (size_t)(eq - name) : strlen(name);
        }
        int o = 0;
        while (o < O_COUNT && !(strlen(opt_defs[o].name) == len && !strncmp(opt_defs[o].name, name, len))) o++;
        if (o == O_COUNT) return USAGE(j, "unknown option '%s' (see gaio help)", a);
        if (!takes(allowed, o))
            return USAGE(j, "--%s is not an option of gaio %s (see gaio help)", opt_defs[o].name, j->cmd);
        if (j->set[o]) return USAGE(j, "--%s is given twice", opt_defs[o].name);
        j->set[o] = true;
        if (!opt_defs[o].takes_value) {
            if (eq) return USAGE(j, "--%s takes no value", opt_defs[o].name);
            continue;
        }
        if (eq) {
            j->val[o] = eq + 1;
        } else {
            /* No value of any option starts with "--": "--interp --device 1" lacks one. */
            if (i + 1 == argc || !strncmp(argv[i + 1], "--", 2))
                return USAGE(j, "--%s needs a value", opt_defs[o].name);
            j->val[o] = argv[++i];
        }
    }
    if (n < npos)
        return USAGE(j, "%s (usage: gaio %s %s; see gaio help)",
                     n == 0 ? "missing IN and OUT" : n == 1 ? "missing OUT" : "missing WxH", j->cmd,
                     npos == 3 ? "IN OUT WxH [options]" : "IN OUT [--op OP] [options]");
    return 0;
}

/* The options every command has, and the output's format. */
static int parse_common(job *j) {
    j->device = -1;
    j->quality = 95;
    j->quiet = j->set[O_QUIET];
    if (j->set[O_DEVICE] && !parse_int(j->val[O_DEVICE], 0, 1 << 16, &j->device))
        return USAGE(j, "--device '%s' is not a device index (0 = host, 1.. = GPUs; see gaio info)", j->val[O_DEVICE]);
    if (j->set[O_QUALITY] && !parse_int(j->val[O_QUALITY], 1, 100, &j->quality))
        return USAGE(j, "--quality '%s' is not a whole number from 1 to 100", j->val[O_QUALITY]);
    j->out_format = imgio_format_of_name(j->out);
    if (j->out_format == IMGIO_NONE)
        return USAGE(j, "'%s': unknown output format (name it .png, .jpg or .jpeg)", j->out);
    if (j->set[O_QUALITY] && j->out_format != IMGIO_JPEG)
        return USAGE(j, "--quality is for JPEG output; '%s' is %s", j->out, imgio_format_name(j->out_format));
    return 0;
}

static int parse_interp(job *j, bool warp) {
    int v = GAIO_INTERP_LINEAR;
    if (j->set[O_INTERP] && (!parse_name(interps, j->val[O_INTERP], &v) ||
                             (warp && v != GAIO_INTERP_NEAREST && v != GAIO_INTERP_LINEAR)))
        return USAGE(j, "--interp '%s' is not one of %s", j->val[O_INTERP],
                     warp ? "nearest, linear" : "nearest, nearest-exact, linear, cubic, area");
    j->interp = (gaio_interp)v;
    return 0;
}

static int parse_value(job *j) {
    if (!j->set[O_VALUE]) return 0;
    double v[4];
    int n;
    if (!parse_list(j->val[O_VALUE], v, 1, 4, &n))
        return USAGE(j, "--value '%s' is not 1 to 4 comma-separated numbers", j->val[O_VALUE]);
    for (int c = 0; c < 4; c++) j->value[c] = (float)(n == 1 ? v[0] : c < n ? v[c] : 0.0);
    j->has_value = true;
    return 0;
}

static int parse_op_args(job *j) {
    int v;
    switch (j->op) {
    case OP_FLIP:
        if (!parse_name(flips, j->val[O_MODE], &v)) return USAGE(j, "--mode '%s' is not h, v or both", j->val[O_MODE]);
        j->flip = (gaio_flip_mode)v;
        return 0;
    case OP_ROTATE:
        if (!parse_int(j->val[O_DEGREES], 90, 270, &j->degrees) || j->degrees % 90)
            return USAGE(j, "--degrees '%s' is not 90, 180 or 270", j->val[O_DEGREES]);
        return 0;
    case OP_CROP: {
        double r[4];
        int n;
        bool ok = parse_list(j->val[O_ROI], r, 4, 4, &n);
        for (int i = 0; ok && i < 4; i++) ok = r[i] == floor(r[i]) && r[i] >= (i < 2 ? 0 : 1) && r[i] <= MAX_SIDE;
        if (!ok)
            return USAGE(j, "--roi '%s' is not X,Y,W,H (whole numbers, X and Y >= 0, W and H >= 1)", j->val[O_ROI]);
        j->roi = (gaio_rect){(int32_t)r[0], (int32_t)r[1], (int32_t)r[2], (int32_t)r[3]};
        return 0;
    }
    case OP_BORDER: {
        int *sides[4] = {&j->top, &j->bottom, &j->left, &j->right};
        const opt_id ids[4] = {O_TOP, O_BOTTOM, O_LEFT, O_RIGHT};
        for (int i = 0; i < 4; i++)
            if (j->set[ids[i]] && !parse_int(j->val[ids[i]], 0, MAX_SIDE, sides[i]))
                return USAGE(j, "--%s '%s' is not a whole number from 0 to %d", opt_defs[ids[i]].name, j->val[ids[i]],
                             MAX_SIDE);
        v = GAIO_BORDER_CONSTANT;
        if (j->set[O_TYPE] && !parse_name(borders, j->val[O_TYPE], &v))
            return USAGE(j, "--type '%s' is not constant, replicate, reflect, reflect101 or wrap", j->val[O_TYPE]);
        j->border = (gaio_border)v;
        if (j->set[O_VALUE] && j->border != GAIO_BORDER_CONSTANT)
            return USAGE(j, "--value is for --type constant, not %s", j->val[O_TYPE]);
        return parse_value(j);
    }
    case OP_WARP: {
        int n;
        if (!parse_list(j->val[O_MATRIX], j->matrix, 6, 6, &n))
            return USAGE(j, "--matrix '%s' is not 6 comma-separated numbers A,B,C,D,E,F", j->val[O_MATRIX]);
        if (j->set[O_SIZE] && !parse_size(j->val[O_SIZE], &j->width, &j->height))
            return USAGE(j, "--size '%s' is not WxH with W and H from 1 to %d, as in 640x480", j->val[O_SIZE],
                         MAX_SIDE);
        int st = parse_interp(j, true);
        return st ? st : parse_value(j);
    }
    case OP_CONVERT: {
        int n;
        j->scale = 1.0;
        j->offset = 0.0;
        if (j->set[O_SCALE] && !parse_list(j->val[O_SCALE], &j->scale, 1, 1, &n))
            return USAGE(j, "--scale '%s' is not a number", j->val[O_SCALE]);
        if (j->set[O_OFFSET] && !parse_list(j->val[O_OFFSET], &j->offset, 1, 1, &n))
            return USAGE(j, "--offset '%s' is not a number", j->val[O_OFFSET]);
        return 0;
    }
    default: return 0;
    }
}

/* ---- the run ------------------------------------------------------------ */

static int pick_device(job *j) {
    int count = 0;
    gaio_status st = gaio_device_count(&count);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_device_count");
    if (j->device >= count)
        return count > 1 ? USAGE(j, "--device %d: no such device (devices here: 0..%d, 0 the host; see gaio info)",
                                 j->device, count - 1)
                         : USAGE(j, "--device %d: no such device (the only device here is 0, the host)", j->device);
    gaio_device_props p;
    if (j->device < 0) { /* the first GPU, else the host */
        j->device = 0;
        for (int d = 1; d < count; d++)
            if (gaio_device_get_props(d, &p) == GAIO_OK && p.kind == GAIO_DEVICE_CUDA) {
                j->device = d;
                break;
            }
    }
    st = gaio_device_get_props(j->device, &p);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_device_get_props");
    snprintf(j->device_name, sizeof j->device_name, "%s", p.name[0] ? p.name : "device");
    return 0;
}

static uint8_t *alloc_pinned(void *user, int width, int height, int channels, size_t bytes) {
    job *j = user;
    (void)width;
    (void)height;
    (void)channels;
    void *p = NULL;
    gaio_status st = gaio_buffer_alloc(j->ctx, GAIO_MEM_PINNED, bytes, &j->in_host);
    if (st == GAIO_OK) st = gaio_buffer_host_ptr(j->in_host, &p);
    if (st != GAIO_OK) {
        snprintf(j->alloc_err, sizeof j->alloc_err, "%s (%s)", gaio_last_error(), gaio_status_string(st));
        return NULL;
    }
    return p;
}

static const char *layout_name(int channels) {
    return channels == 1 ? "gray" : channels == 3 ? "RGB" : channels == 4 ? "RGBA" : "?";
}

/* The output's shape, or why this input cannot take the op. */
static int plan_output(job *j, const imgio_image *in, int *ow, int *oh, int *oc) {
    *ow = in->width;
    *oh = in->height;
    *oc = in->channels;
    switch (j->op) {
    case OP_RESIZE:
        *ow = j->width;
        *oh = j->height;
        break;
    case OP_ROTATE:
        if (j->degrees != 180) {
            *ow = in->height;
            *oh = in->width;
        }
        break;
    case OP_CROP:
        if (j->roi.x > in->width - j->roi.width || j->roi.y > in->height - j->roi.height)
            return FAIL(j, "--roi %d,%d,%d,%d is not inside the %dx%d image '%s'", (int)j->roi.x, (int)j->roi.y,
                        (int)j->roi.width, (int)j->roi.height, in->width, in->height, j->in);
        *ow = j->roi.width;
        *oh = j->roi.height;
        break;
    case OP_BORDER:
        *ow = in->width + j->left + j->right;
        *oh = in->height + j->top + j->bottom;
        break;
    case OP_WARP:
        if (j->set[O_SIZE]) {
            *ow = j->width;
            *oh = j->height;
        }
        break;
    case OP_GRAY:
    case OP_SWAP_RB:
        if (in->channels == 1)
            return FAIL(j, "--op %s needs an RGB or RGBA image; '%s' is gray", j->op_name, j->in);
        if (j->op == OP_GRAY) *oc = 1;
        break;
    case OP_RGB:
    case OP_RGBA: {
        int want = j->op == OP_RGB ? 3 : 4;
        if (in->channels == want) return FAIL(j, "'%s' is %s already", j->in, layout_name(want));
        *oc = want;
        break;
    }
    default: break;
    }
    int max = imgio_max_side(j->out_format);
    if (*ow > max || *oh > max)
        return FAIL(j, "the result would be %dx%d, larger than %s allows (%d per side)", *ow, *oh,
                    imgio_format_name(j->out_format), max);
    return 0;
}

static gaio_status enqueue_op(job *j, const gaio_image *s, const gaio_image *d, const char **call) {
    static const gaio_color to_rgb[5] = {0, GAIO_COLOR_GRAY2RGB, 0, 0, GAIO_COLOR_RGBA2RGB};
    static const gaio_color to_rgba[5] = {0, GAIO_COLOR_GRAY2RGB, 0, GAIO_COLOR_RGB2RGBA, 0};
    const float *value = j->has_value ? j->value : NULL;
    switch (j->op) {
    case OP_RESIZE: *call = "gaio_resize"; return gaio_resize(j->stream, s, d, j->interp);
    case OP_COPY: return GAIO_OK;
    case OP_FLIP: *call = "gaio_flip"; return gaio_flip(j->stream, s, d, j->flip);
    case OP_ROTATE: *call = "gaio_rotate"; return gaio_rotate(j->stream, s, d, j->degrees);
    case OP_CROP: *call = "gaio_crop"; return gaio_crop(j->stream, s, j->roi, d);
    case OP_BORDER:
        *call = "gaio_copy_make_border";
        return gaio_copy_make_border(j->stream, s, d, j->top, j->left, j->border, value);
    case OP_WARP:
        *call = "gaio_warp_affine";
        return gaio_warp_affine(j->stream, s, d, j->matrix, j->interp, j->set[O_INVERSE] ? GAIO_WARP_INVERSE_MAP : 0u,
                                value);
    case OP_GRAY: *call = "gaio_cvt_color"; return gaio_cvt_color(j->stream, s, d, GAIO_COLOR_RGB2GRAY, 0);
    case OP_RGB: *call = "gaio_cvt_color"; return gaio_cvt_color(j->stream, s, d, to_rgb[s->channels], 0);
    case OP_RGBA: *call = "gaio_cvt_color"; return gaio_cvt_color(j->stream, s, d, to_rgba[s->channels], 0);
    case OP_SWAP_RB: *call = "gaio_cvt_color"; return gaio_cvt_color(j->stream, s, d, GAIO_COLOR_SWAP_RB, 0);
    case OP_CONVERT: *call = "gaio_convert"; return gaio_convert(j->stream, s, d, j->scale, j->offset);
    }
    return GAIO_ERR_INVALID_ARG;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void describe_op(const job *j, char *buf, size_t len) {
    switch (j->op) {
    case OP_RESIZE: snprintf(buf, len, "%s", name_of(interps, j->interp)); break;
    case OP_FLIP: snprintf(buf, len, "flip %s", name_of(flips, j->flip)); break;
    case OP_ROTATE: snprintf(buf, len, "rotate %d", j->degrees); break;
    case OP_CROP:
        snprintf(buf, len, "crop %d,%d,%d,%d", (int)j->roi.x, (int)j->roi.y, (int)j->roi.width, (int)j->roi.height);
        break;
    case OP_BORDER:
        snprintf(buf, len, "border %s %d,%d,%d,%d", name_of(borders, j->border), j->top, j->bottom, j->left,
                 j->right);
        break;
    case OP_WARP: snprintf(buf, len, "warp-affine %s", name_of(interps, j->interp)); break;
    case OP_CONVERT: snprintf(buf, len, "convert *%g%+g", j->scale, j->offset); break;
    default: snprintf(buf, len, "%s", j->op_name); break;
    }
}

static int run(job *j) {
    char err[512];
    /* The input is read (not yet decoded) before gaio starts: a wrong name fails fast. */
    if (imgio_load(j->in, &j->file, err, sizeof err) != IMGIO_OK) return FAIL(j, "cannot read '%s': %s", j->in, err);
    int rc = pick_device(j);
    if (rc) return rc;
    gaio_status st = gaio_context_create(j->device, NULL, &j->ctx);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_context_create");
    st = gaio_stream_create(j->ctx, 0, 0, &j->stream);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_stream_create");

    imgio_image in;
    imgio_status ist = imgio_decode(&j->file, alloc_pinned, j, &in, err, sizeof err);
    imgio_free(&j->file);
    if (ist == IMGIO_ALLOC_FAILED) return FAIL(j, "cannot read '%s': %s", j->in, j->alloc_err);
    if (ist != IMGIO_OK) return FAIL(j, "cannot read '%s': %s", j->in, err);

    int ow, oh, oc;
    rc = plan_output(j, &in, &ow, &oh, &oc);
    if (rc) return rc;
    size_t in_bytes = in.pitch * (size_t)in.height, out_bytes = (size_t)ow * (size_t)oh * (size_t)oc;
    st = gaio_buffer_alloc(j->ctx, GAIO_MEM_DEVICE, in_bytes, &j->in_dev);
    if (st == GAIO_OK && j->op != OP_COPY) st = gaio_buffer_alloc(j->ctx, GAIO_MEM_DEVICE, out_bytes, &j->out_dev);
    if (st == GAIO_OK) st = gaio_buffer_alloc(j->ctx, GAIO_MEM_PINNED, out_bytes, &j->out_host);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_buffer_alloc");
    void *out_px = NULL;
    st = gaio_buffer_host_ptr(j->out_host, &out_px);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_buffer_host_ptr");

    gaio_image s = gaio_image_make(j->in_dev, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, in.width, in.height, in.channels);
    gaio_image d = gaio_image_make(j->op == OP_COPY ? j->in_dev : j->out_dev, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, 1, ow,
                                   oh, oc);
    double t0 = now_ms();
    st = gaio_memcpy_async(j->stream, j->in_dev, 0, j->in_host, 0, in_bytes);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_memcpy_async");
    const char *call = "";
    st = enqueue_op(j, &s, &d, &call);
    if (st != GAIO_OK) return gaio_failed(j, st, call);
    st = gaio_memcpy_async(j->stream, j->out_host, 0, d.buffer, 0, out_bytes);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_memcpy_async");
    st = gaio_future_fence(j->stream, &j->done);
    if (st != GAIO_OK) return gaio_failed(j, st, "gaio_future_fence");
    st = gaio_future_wait(j->done, GAIO_INFINITE);
    double ms = now_ms() - t0;
    if (st != GAIO_OK) {
        const char *why = gaio_future_message(j->done);
        return FAIL(j, "%s on %s failed: %s%s%s", j->op == OP_COPY ? "the copy" : call, j->device_name,
                    gaio_status_string(st), why && *why ? ": " : "", why ? why : "");
    }

    imgio_image out = {.width = ow, .height = oh, .channels = oc, .pitch = (size_t)ow * (size_t)oc, .pixels = out_px};
    if (imgio_write(j->out, &out, j->quality, err, sizeof err) != IMGIO_OK)
        return FAIL(j, "cannot write '%s': %s", j->out, err);
    if (!j->quiet) {
        char what[160];
        describe_op(j, what, sizeof what);
        printf("%s %s (%dx%d %s) -> %s (%dx%d %s%s) %s on %s in %.2f ms\n", j->op == OP_RESIZE ? "resized" : "converted",
               j->in, in.width, in.height, layout_name(in.channels), j->out, ow, oh,
               layout_name(j->out_format == IMGIO_JPEG && oc == 4 ? 3 : oc),
               j->out_format == IMGIO_JPEG && oc == 4 ? ", alpha dropped" : "", what, j->device_name, ms);
    }
    return 0;
}

static void finish(job *j) {
    imgio_free(&j->file);
    /* Nothing may be in flight when the buffers go: an error after an enqueue leaves
     * work behind, and gaio_shutdown would wait for it. */
    if (j->stream) gaio_stream_synchronize(j->stream);
    gaio_future_release(j->done);
    gaio_buffer_release(j->in_host);
    gaio_buffer_release(j->in_dev);
    gaio_buffer_release(j->out_dev);
    gaio_buffer_release(j->out_host);
    gaio_stream_release(j->stream);
    gaio_context_release(j->ctx);
    gaio_shutdown();
}

static int execute(job *j) {
    int rc = run(j);
    finish(j);
    return rc;
}

int gaio_cmd_resize(int argc, char **argv) {
    job j = {.cmd = "resize", .op = OP_RESIZE, .op_name = "resize"};
    const char *pos[3];
    int rc = parse_args(&j, argc, argv, COMMON_OPTS | BIT(O_INTERP), 3, pos);
    if (rc) return rc < 0 ? 0 : rc;
    j.in = pos[0];
    j.out = pos[1];
    if (!parse_size(pos[2], &j.width, &j.height))
        return USAGE(&j, "size '%s' is not WxH with W and H from 1 to %d, as in 224x224", pos[2], MAX_SIDE);
    if ((rc = parse_common(&j)) || (rc = parse_interp(&j, false))) return rc;
    return execute(&j);
}

int gaio_cmd_convert(int argc, char **argv) {
    job j = {.cmd = "convert"};
    unsigned all = COMMON_OPTS | BIT(O_OP);
    for (size_t i = 0; i < N_CONVERT_OPS; i++) all |= convert_ops[i].opts;
    const char *pos[2];
    int rc = parse_args(&j, argc, argv, all, 2, pos);
    if (rc) return rc < 0 ? 0 : rc;
    j.in = pos[0];
    j.out = pos[1];
    const char *opname = j.set[O_OP] ? j.val[O_OP] : "copy";
    size_t k = 0;
    while (k < N_CONVERT_OPS && strcmp(convert_ops[k].name, opname)) k++;
    if (k == N_CONVERT_OPS)
        return USAGE(&j,
                     "unknown --op '%s' (one of copy, flip, rotate, crop, border, warp-affine, gray, rgb, rgba, "
                     "swap-rb, convert)",
                     opname);
    j.op = convert_ops[k].kind;
    j.op_name = convert_ops[k].name;
    for (int o = O_INTERP; o < O_COUNT; o++) {
        if (o == O_OP) continue;
        if (j.set[o] && !takes(convert_ops[k].opts, o))
            return USAGE(&j, "--%s does not apply to --op %s (see gaio help)", opt_defs[o].name, j.op_name);
        if (!j.set[o] && takes(convert_ops[k].required, o))
            return USAGE(&j, "--op %s needs --%s (see gaio help)", j.op_name, opt_defs[o].name);
    }
    if ((rc = parse_common(&j)) || (rc = parse_op_args(&j))) return rc;
    return execute(&j);
}
