/* PNG (libpng) and JPEG (libjpeg-turbo) reading and writing for the CLI.
 *
 * Both libraries report errors by calling a handler that must not return; their
 * defaults print to stderr and exit. Ours record the message and longjmp back to the
 * call that set the jump point, so a corrupt file is a status and one line of text.
 * Each setjmp lives in a function that changes no local variable after it: all
 * state is in a job struct the caller owns, so nothing is indeterminate after the
 * jump (C11 7.13.2.1). */
#include "image_io.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jpeglib.h>
/* After jpeglib.h: the message codes, JWRN_JPEG_EOF among them. */
#include <jerror.h>
#include <png.h>

static void say(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* One line, whatever a library put in its message. */
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

imgio_format imgio_format_of_name(const char *path) {
    const char *dot = path ? strrchr(path, '.') : NULL;
    if (!dot || strchr(dot, '/')) return IMGIO_NONE;
    if (!strcasecmp(dot, ".png")) return IMGIO_PNG;
    if (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg")) return IMGIO_JPEG;
    return IMGIO_NONE;
}

const char *imgio_format_name(imgio_format format) {
    switch (format) {
    case IMGIO_PNG: return "PNG";
    case IMGIO_JPEG: return "JPEG";
    case IMGIO_NONE: break;
    }
    return "?";
}

int imgio_max_side(imgio_format format) {
    /* JPEG's header has 16-bit sides and libjpeg refuses more than JPEG_MAX_DIMENSION;
     * PNG's are 31-bit, but libpng's default user limit is a million. */
    return format == IMGIO_JPEG ? JPEG_MAX_DIMENSION : 1000000;
}

/* ---- the whole file in memory ------------------------------------------ */

static imgio_status slurp(const char *path, imgio_file *b, char *err, size_t errlen) {
    b->data = NULL;
    b->size = 0;
    b->format = IMGIO_NONE;
    FILE *f = fopen(path, "rb");
    if (!f) {
        say(err, errlen, "%s", strerror(errno));
        return IMGIO_FAILED;
    }
    size_t cap = 0;
    for (;;) {
        if (b->size == cap) {
            size_t ncap = cap ? cap * 2 : (size_t)1 << 16;
            uint8_t *p = realloc(b->data, ncap);
            if (!p) {
                say(err, errlen, "out of memory reading %zu bytes", ncap);
                goto fail;
            }
            b->data = p;
            cap = ncap;
        }
        errno = 0;
        size_t n = fread(b->data + b->size, 1, cap - b->size, f);
        b->size += n;
        if (n) continue;
        if (ferror(f)) { /* a directory opens, then fails here with EISDIR */
            say(err, errlen, "%s", strerror(errno ? errno : EIO));
            goto fail;
        }
        break;
    }
    fclose(f);
    return IMGIO_OK;
fail:
    fclose(f);
    free(b->data);
    b->data = NULL;
    return IMGIO_FAILED;
}

/* ---- PNG ---------------------------------------------------------------- */

typedef struct png_job {
    /* in */
    const imgio_file *in;
    size_t pos;
    imgio_alloc_fn alloc;
    void *user;
    const imgio_image *src; /* writing */
    FILE *file;             /* writing */
    /* out */
    imgio_image img;
    png_bytep *rows;
    bool alloc_failed;
    char msg[256];
} png_job;

static void png_on_error(png_structp png, png_const_charp text) {
    png_job *job = png_get_error_ptr(png);
    if (!job->msg[0]) say(job->msg, sizeof job->msg, "PNG: %s", text);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text; /* ancillary-chunk trouble: the pixels are still good */
}

static void png_read_blob(png_structp png, png_bytep out, size_t n) {
    png_job *job = png_get_io_ptr(png);
    if (n > job->in->size - job->pos) {
        say(job->msg, sizeof job->msg, "PNG: the file is truncated (%zu bytes)", job->in->size);
        png_longjmp(png, 1);
    }
    memcpy(out, job->in->data + job->pos, n);
    job->pos += n;
}

static bool png_decode(png_structp png, png_infop info, png_job *job) {
    if (setjmp(png_jmpbuf(png))) return false;
    png_set_read_fn(png, job, png_read_blob);
    png_read_info(png, info);
    int depth = png_get_bit_depth(png, info);
    int type = png_get_color_type(png, info);
    bool trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (trns) png_set_tRNS_to_alpha(png);
    if (depth == 16) png_set_strip_16(png);
    /* Two channels (gray + alpha) are no image format gaio's color ops take: RGBA is. */
    if (!(type & PNG_COLOR_MASK_COLOR) && ((type & PNG_COLOR_MASK_ALPHA) || trns)) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    int w = (int)png_get_image_width(png, info), h = (int)png_get_image_height(png, info);
    int c = png_get_channels(png, info);
    if (png_get_bit_depth(png, info) != 8 || (c != 1 && c != 3 && c != 4)) {
        say(job->msg, sizeof job->msg, "PNG: %d channels of %d bits is not a layout this tool reads", c,
            png_get_bit_depth(png, info));
        return false;
    }
    size_t pitch = (size_t)w * (size_t)c;
    if (png_get_rowbytes(png, info) != pitch) {
        say(job->msg, sizeof job->msg, "PNG: unexpected row size %zu for %dx%d with %d channels",
            (size_t)png_get_rowbytes(png, info), w, h, c);
        return false;
    }
    job->rows = malloc(sizeof *job->rows * (size_t)h);
    if (!job->rows) {
        say(job->msg, sizeof job->msg, "out of memory");
        return false;
    }
    uint8_t *px = job->alloc(job->user, w, h, c, pitch * (size_t)h);
    if (!px) {
        job->alloc_failed = true;
        return false;
    }
    job->img = (imgio_image){.width = w, .height = h, .channels = c, .pitch = pitch, .pixels = px};
    for (int y = 0; y < h; y++) job->rows[y] = px + (size_t)y * pitch;
    png_read_image(png, job->rows);
    /* Reads up to IEND: a file cut after the pixels is corrupt too. */
    png_read_end(png, NULL);
    return true;
}

static imgio_status png_read_file(const imgio_file *in, imgio_alloc_fn alloc, void *user, imgio_image *out, char *err,
                                  size_t errlen) {
    png_job job = {.in = in, .alloc = alloc, .user = user};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        say(err, errlen, "out of memory");
        return IMGIO_FAILED;
    }
    bool ok = png_decode(png, info, &job);
    png_destroy_read_struct(&png, &info, NULL);
    free(job.rows);
    if (ok) {
        *out = job.img;
        return IMGIO_OK;
    }
    if (job.alloc_failed) return IMGIO_ALLOC_FAILED;
    say(err, errlen, "%s", job.msg[0] ? job.msg : "PNG: decoding failed");
    return IMGIO_FAILED;
}

static bool png_encode(png_structp png, png_infop info, png_job *job) {
    if (setjmp(png_jmpbuf(png))) return false;
    const imgio_image *img = job->src;
    static const int types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                 PNG_COLOR_TYPE_RGB_ALPHA};
    png_init_io(png, job->file);
    png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8, types[img->channels],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < img->height; y++) png_write_row(png, img->pixels + (size_t)y * img->pitch);
    png_write_end(png, info);
    return true;
}

static imgio_status png_write_file(FILE *f, const imgio_image *img, char *err, size_t errlen) {
    png_job job = {.src = img, .file = f};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &job, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        say(err, errlen, "out of memory");
        return IMGIO_FAILED;
    }
    bool ok = png_encode(png, info, &job);
    png_destroy_write_struct(&png, &info);
    if (ok) return IMGIO_OK;
    say(err, errlen, "%s", job.msg[0] ? job.msg : "PNG: encoding failed");
    return IMGIO_FAILED;
}

/* ---- JPEG --------------------------------------------------------------- */

typedef struct jpeg_fail {
    struct jpeg_error_mgr pub; /* first: libjpeg hands us a pointer to it */
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX + 8];
} jpeg_fail;

static void jpeg_on_error(j_common_ptr cinfo) {
    jpeg_fail *f = (jpeg_fail *)cinfo->err;
    char text[JMSG_LENGTH_MAX];
    f->pub.format_message(cinfo, text);
    say(f->msg, sizeof f->msg, "JPEG: %s", text);
    longjmp(f->jump, 1);
}

/* Warnings are level -1. libjpeg pads a truncated file with gray and goes on after
 * "Premature end of JPEG file": that image is not the file's, so it fails here
 * (also when only the end marker is missing: the Huffman decoder reads ahead, so
 * whether the last pixels were whole cannot be told apart). Other warnings
 * (extraneous bytes before a marker, ...) are common in files cameras write and
 * leave the pixels intact, as OpenCV and browsers agree. */
static void jpeg_on_message(j_common_ptr cinfo, int level) {
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_on_error(cinfo);
}

static void jpeg_quiet(j_common_ptr cinfo) { (void)cinfo; }

static void jpeg_errors(jpeg_fail *f) {
    jpeg_std_error(&f->pub);
    f->pub.error_exit = jpeg_on_error;
    f->pub.emit_message = jpeg_on_message;
    f->pub.output_message = jpeg_quiet;
    f->msg[0] = 0;
}

typedef struct jpeg_job {
    struct jpeg_decompress_struct d;
    struct jpeg_compress_struct c;
    jpeg_fail fail;
    const imgio_file *in;
    imgio_alloc_fn alloc;
    void *user;
    const imgio_image *src;
    FILE *file;
    uint8_t *row; /* RGBA -> RGB when writing */
    imgio_image img;
    bool alloc_failed;
    char msg[160];
} jpeg_job;

static bool jpeg_decode(jpeg_job *job) {
    struct jpeg_decompress_struct *d = &job->d;
    /* A zeroed struct that create never reached is safe to destroy. */
    if (setjmp(job->fail.jump)) return false;
    jpeg_create_decompress(d);
    jpeg_mem_src(d, job->in->data, (unsigned long)job->in->size);
    if (jpeg_read_header(d, TRUE) != JPEG_HEADER_OK) {
        say(job->msg, sizeof job->msg, "JPEG: the file holds tables but no image");
        return false;
    }
    int c;
    if (d->jpeg_color_space == JCS_GRAYSCALE) {
        d->out_color_space = JCS_GRAYSCALE;
        c = 1;
    } else if (d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK) {
        say(job->msg, sizeof job->msg, "JPEG: CMYK images are not supported");
        return false;
    } else {
        d->out_color_space = JCS_RGB;
        c = 3;
    }
    /* The pixels are asked for before jpeg_start_decompress: for a progressive file
     * it allocates coefficient buffers for the whole image (about twice the pixels),
     * so a 1 KB file claiming 65500 x 65500 would cost gigabytes before the caller
     * could refuse it. Found by fuzz/fuzz_image_decode. */
    jpeg_calc_output_dimensions(d);
    int w = (int)d->output_width, h = (int)d->output_height;
    if (d->output_components != c) {
        say(job->msg, sizeof job->msg, "JPEG: decoder gives %d components, expected %d", d->output_components, c);
        return false;
    }
    size_t pitch = (size_t)w * (size_t)c;
    uint8_t *px = job->alloc(job->user, w, h, c, pitch * (size_t)h);
    if (!px) {
        job->alloc_failed = true;
        return false;
    }
    job->img = (imgio_image){.width = w, .height = h, .channels = c, .pitch = pitch, .pixels = px};
    jpeg_start_decompress(d);
    if ((int)d->output_width != w || (int)d->output_height != h || d->output_components != c) {
        say(job->msg, sizeof job->msg, "JPEG: decoder gives %ux%ux%d, expected %dx%dx%d", d->output_width,
            d->output_height, d->output_components, w, h, c);
        return false;
    }
    while (d->output_scanline < d->output_height) {
        JSAMPROW row = px + (size_t)d->output_scanline * pitch;
        jpeg_read_scanlines(d, &row, 1);
    }
    jpeg_finish_decompress(d);
    return true;
}

static imgio_status jpeg_read_file(const imgio_file *in, imgio_alloc_fn alloc, void *user, imgio_image *out, char *err,
                                   size_t errlen) {
    jpeg_job *job = calloc(1, sizeof *job);
    if (!job) {
        say(err, errlen, "out of memory");
        return IMGIO_FAILED;
    }
    job->in = in;
    job->alloc = alloc;
    job->user = user;
    jpeg_errors(&job->fail);
    job->d.err = &job->fail.pub;
    imgio_status st = IMGIO_FAILED;
    if (jpeg_decode(job)) {
        *out = job->img;
        st = IMGIO_OK;
    } else if (job->alloc_failed) {
        st = IMGIO_ALLOC_FAILED;
    } else {
        say(err, errlen, "%s", job->msg[0] ? job->msg : job->fail.msg[0] ? job->fail.msg : "JPEG: decoding failed");
    }
    jpeg_destroy_decompress(&job->d);
    free(job);
    return st;
}

static bool jpeg_encode(jpeg_job *job, int quality) {
    struct jpeg_compress_struct *c = &job->c;
    const imgio_image *img = job->src;
    if (setjmp(job->fail.jump)) return false;
    jpeg_create_compress(c);
    jpeg_stdio_dest(c, job->file);
    c->image_width = (JDIMENSION)img->width;
    c->image_height = (JDIMENSION)img->height;
    c->input_components = img->channels == 1 ? 1 : 3;
    c->in_color_space = img->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(c);
    jpeg_set_quality(c, quality, TRUE);
    jpeg_start_compress(c, TRUE);
    while (c->next_scanline < c->image_height) {
        const uint8_t *src = img->pixels + (size_t)c->next_scanline * img->pitch;
        JSAMPROW row = (JSAMPROW)src;
        if (img->channels == 4) { /* alpha dropped: JPEG has none */
            for (int x = 0; x < img->width; x++) memcpy(job->row + 3 * (size_t)x, src + 4 * (size_t)x, 3);
            row = job->row;
        }
        jpeg_write_scanlines(c, &row, 1);
    }
    jpeg_finish_compress(c);
    return true;
}

static imgio_status jpeg_write_file(FILE *f, const imgio_image *img, int quality, char *err, size_t errlen) {
    jpeg_job *job = calloc(1, sizeof *job);
    if (!job || (img->channels == 4 && !(job->row = malloc(3 * (size_t)img->width)))) {
        free(job);
        say(err, errlen, "out of memory");
        return IMGIO_FAILED;
    }
    job->src = img;
    job->file = f;
    jpeg_errors(&job->fail);
    job->c.err = &job->fail.pub;
    imgio_status st = IMGIO_OK;
    if (!jpeg_encode(job, quality)) {
        say(err, errlen, "%s", job->fail.msg[0] ? job->fail.msg : "JPEG: encoding failed");
        st = IMGIO_FAILED;
    }
    jpeg_destroy_compress(&job->c);
    free(job->row);
    free(job);
    return st;
}

/* ---- entry points ------------------------------------------------------- */

imgio_format imgio_sniff(const uint8_t *data, size_t size) {
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (!data) return IMGIO_NONE;
    if (size >= 8 && !memcmp(data, png_sig, 8)) return IMGIO_PNG;
    if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return IMGIO_JPEG;
    return IMGIO_NONE;
}

imgio_status imgio_load(const char *path, imgio_file *file, char *err, size_t errlen) {
    imgio_status st = slurp(path, file, err, errlen);
    if (st != IMGIO_OK) return st;
    file->format = imgio_sniff(file->data, file->size);
    if (file->format == IMGIO_NONE) {
        say(err, errlen, file->size ? "not a PNG or JPEG file" : "the file is empty");
        imgio_free(file);
        return IMGIO_FAILED;
    }
    return IMGIO_OK;
}

void imgio_free(imgio_file *file) {
    if (!file) return;
    free(file->data);
    file->data = NULL;
    file->size = 0;
    file->format = IMGIO_NONE;
}

imgio_status imgio_decode(const imgio_file *file, imgio_alloc_fn alloc, void *user, imgio_image *out, char *err,
                          size_t errlen) {
    switch (file ? file->format : IMGIO_NONE) {
    case IMGIO_PNG: return png_read_file(file, alloc, user, out, err, errlen);
    case IMGIO_JPEG: return jpeg_read_file(file, alloc, user, out, err, errlen);
    case IMGIO_NONE: break;
    }
    say(err, errlen, "not a PNG or JPEG file");
    return IMGIO_FAILED;
}

imgio_status imgio_read(const char *path, imgio_alloc_fn alloc, void *user, imgio_image *out, char *err,
                        size_t errlen) {
    imgio_file f;
    imgio_status st = imgio_load(path, &f, err, errlen);
    if (st != IMGIO_OK) return st;
    st = imgio_decode(&f, alloc, user, out, err, errlen);
    imgio_free(&f);
    return st;
}

imgio_status imgio_write(const char *path, const imgio_image *img, int quality, char *err, size_t errlen) {
    imgio_format fmt = imgio_format_of_name(path);
    if (fmt == IMGIO_NONE) {
        say(err, errlen, "unknown format: the name must end in .png, .jpg or .jpeg");
        return IMGIO_FAILED;
    }
    if (!img || !img->pixels || img->width < 1 || img->height < 1 || img->channels < 1 || img->channels > 4 ||
        img->channels == 2 || img->pitch < (size_t)img->width * (size_t)img->channels) {
        say(err, errlen, "internal error: bad image to write");
        return IMGIO_FAILED;
    }
    int max = imgio_max_side(fmt);
    if (img->width > max || img->height > max) {
        say(err, errlen, "%dx%d is larger than %s allows (%d per side)", img->width, img->height,
            imgio_format_name(fmt), max);
        return IMGIO_FAILED;
    }
    if (fmt == IMGIO_JPEG && (quality < 1 || quality > 100)) {
        say(err, errlen, "JPEG quality %d is not in 1..100", quality);
        return IMGIO_FAILED;
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        say(err, errlen, "%s", strerror(errno));
        return IMGIO_FAILED;
    }
    imgio_status st = fmt == IMGIO_PNG ? png_write_file(f, img, err, errlen) : jpeg_write_file(f, img, quality, err, errlen);
    /* A full disk shows up at the flush, not at the writes before it. */
    if (st == IMGIO_OK && (fflush(f) != 0 || ferror(f))) {
        say(err, errlen, "%s", strerror(errno ? errno : EIO));
        st = IMGIO_FAILED;
    }
    if (fclose(f) != 0 && st == IMGIO_OK) {
        say(err, errlen, "%s", strerror(errno));
        st = IMGIO_FAILED;
    }
    if (st != IMGIO_OK) remove(path);
    return st;
}
