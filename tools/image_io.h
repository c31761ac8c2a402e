/* PNG and JPEG files <-> 8-bit interleaved pixels, for the CLI's image commands.
 *
 * Pixels are rows of width * channels bytes, `pitch` bytes apart; channels are
 * 1 (gray), 3 (RGB) or 4 (RGBA), in that order. Reading takes the format from the
 * file's first bytes, writing from the name's extension. Neither library may print
 * or exit: every failure comes back as a status and one line of text. */
#ifndef GAIO_TOOLS_IMAGE_IO_H
#define GAIO_TOOLS_IMAGE_IO_H

#include <stddef.h>
#include <stdint.h>

typedef enum imgio_format {
    IMGIO_NONE = 0,
    IMGIO_PNG = 1,
    IMGIO_JPEG = 2
} imgio_format;

typedef enum imgio_status {
    IMGIO_OK = 0,
    IMGIO_FAILED = 1,      /* err says why */
    IMGIO_ALLOC_FAILED = 2 /* the allocator returned NULL; it keeps its own reason */
} imgio_status;

typedef struct imgio_image {
    int width, height, channels;
    size_t pitch; /* bytes between rows */
    uint8_t *pixels;
} imgio_image;

/* Where decoded pixels go: called once, after the header is read, for a packed
 * image (pitch = width * channels); returns the memory or NULL. The caller owns it,
 * also when reading fails afterwards. */
typedef uint8_t *(*imgio_alloc_fn)(void *user, int width, int height, int channels, size_t bytes);

/* The format a file name asks for by its extension (.png, .jpg, .jpeg; any case). */
imgio_format imgio_format_of_name(const char *path);
const char *imgio_format_name(imgio_format format);

/* The largest side a format can store (JPEG: 65500). */
int imgio_max_side(imgio_format format);

/* A file read into memory whose first bytes say PNG or JPEG. */
typedef struct imgio_file {
    uint8_t *data;
    size_t size;
    imgio_format format;
} imgio_file;

/* The format a file's first bytes say (PNG's 8-byte signature, JPEG's SOI plus a
 * marker); IMGIO_NONE for anything else. */
imgio_format imgio_sniff(const uint8_t *data, size_t size);

/* Reads path whole; fails when it cannot be read or is not a PNG or JPEG (so a
 * wrong file fails before any other work). imgio_free releases it. */
imgio_status imgio_load(const char *path, imgio_file *file, char *err, size_t errlen);
void imgio_free(imgio_file *file);

/* Decodes a PNG (8 or 16 bits: 16 is stripped to its high byte, as OpenCV's
 * default does; palette, gray + alpha and low bit depths are expanded to gray, RGB
 * or RGBA) or a JPEG (gray or RGB; CMYK is refused) into memory from alloc. A
 * truncated or corrupt file fails. */
imgio_status imgio_decode(const imgio_file *file, imgio_alloc_fn alloc, void *user, imgio_image *out, char *err,
                          size_t errlen);

/* imgio_load + imgio_decode + imgio_free. */
imgio_status imgio_read(const char *path, imgio_alloc_fn alloc, void *user, imgio_image *out, char *err,
                        size_t errlen);

/* Writes img as the format of path's extension. JPEG stores gray or RGB: RGBA loses
 * its alpha. quality (JPEG only): 1..100. A file left half-written is removed. */
imgio_status imgio_write(const char *path, const imgio_image *img, int quality, char *err, size_t errlen);

#endif
