/* An on-disk cache of gaio engines (gaio_engine_save / _load), for `gaio classify`.
 *
 * An entry is DIR/<key>.engine, key = FNV-1a 128 of a description of everything the
 * engine depends on: a 128-bit hash of the model file's bytes (four FNV-1a 128 lanes
 * over 64-bit words, at memory speed) and their count, the build options
 * (batch, precision, layout, shapes, flags), the device (kind, name, ordinal, compute
 * capability), gaio's version (headers and library), the DNN library's version
 * (cuDNN's on a GPU, oneDNN's on the host, as gaio_dnn_library_status says), and
 * GAIO_MODEL_CUDA_GRAPH. gaio_engine_load checks the file again (gaio's version, the
 * GPU model, cuDNN's version, the file's integrity): an entry it refuses is stale and
 * is rebuilt and overwritten; only "no such file" is a plain miss.
 *
 * Not covered by the key: an ONNX model's external data files (only the .onnx file's
 * bytes are hashed); after changing them, use --no-cache once or delete the entry. */
#ifndef GAIO_TOOLS_ENGINE_CACHE_H
#define GAIO_TOOLS_ENGINE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gaio/gaio.h"

/* FNV-1a with 128-bit state (offset basis 0x6c62272e07bb014262b821756295c58d, prime
 * 2^88 + 0x13b), as two 64-bit halves. */
typedef struct fnv128 {
    uint64_t hi, lo;
} fnv128;

void fnv128_init(fnv128 *h);
void fnv128_update(fnv128 *h, const void *data, size_t size);
/* 32 lower-case hex digits and a NUL into hex[33]. */
void fnv128_hex(const fnv128 *h, char hex[33]);

/* The default directory: $XDG_CACHE_HOME/gaio when XDG_CACHE_HOME is an absolute path,
 * else $HOME/.cache/gaio. Returns false (buf "") when neither can be made. */
bool engine_cache_default_dir(char *buf, size_t size);

/* The model file's part of the key: its hash and size, or why it could not be read.
 * Hashing a 100 MB model takes a tenth of a second, so a caller may compute it on
 * another thread while the device starts, and hand it to engine_cache_get / _find. */
typedef struct engine_cache_model {
    bool ok;
    char hex[33];
    uint64_t bytes;
    char err[1100];
} engine_cache_model;

void engine_cache_hash_model(const char *model_path, engine_cache_model *out);

/* An entry looked up and its file read, before there is a context: no GPU work, so a
 * caller may do it while the device's context is being made (a 50 MB file is read in
 * tens of milliseconds). */
typedef struct engine_cache_entry {
    bool use;           /* a cache directory is given and the key was made */
    bool found;         /* the file is there and data holds its bytes */
    void *data;
    size_t size;
    char path[1024];    /* the entry ("" without a cache) */
    char why[1800];     /* why the cache is not used, or why the file could not be read */
    double key_seconds; /* of the key (the model's hash, the device, the libraries' versions) */
} engine_cache_entry;

/* hashed: model_path's engine_cache_hash_model, or NULL to hash it here. */
void engine_cache_lookup(const char *dir, const char *model_path, const engine_cache_model *hashed, int device,
                         const gaio_engine_options *options, engine_cache_entry *out);
void engine_cache_entry_free(engine_cache_entry *e);

/* What engine_cache_get did. */
typedef struct engine_cache_result {
    bool loaded;       /* from the cache */
    bool built;        /* by gaio_engine_build */
    bool saved;        /* written to the cache */
    bool stale;        /* an entry was there that gaio_engine_load refused */
    double seconds;    /* of the load, or of the build */
    char path[1024];   /* the entry ("" without a cache) */
    char note[5200];   /* one line for stderr: what happened and how long it took */
} engine_cache_result;

/* The engine of the ONNX file model_path (already loaded as m) for ctx (of device
 * index device) with options: loaded from the cache in dir when an entry is there and
 * loads, else built with gaio_engine_build and saved there. entry: the same
 * arguments' engine_cache_lookup (its bytes are freed here), or NULL to look up here. dir NULL: no cache (built).
 * Problems of the cache itself (a directory that cannot be made, a file that cannot be
 * read or written, a stale entry) never fail the call: it builds, and says so in
 * res->note. Returns gaio_engine_build's status when the build fails (gaio_last_error
 * says why). */
gaio_status engine_cache_get(const char *dir, const char *model_path, engine_cache_entry *entry, gaio_model *m,
                             gaio_context *ctx, int device, const gaio_engine_options *options, gaio_engine **out,
                             engine_cache_result *res);

/* The cached engine only: GAIO_OK with *out loaded from the cache, else
 * GAIO_ERR_NOT_FOUND (no cache, no entry, or a stale one: res->note says which) and
 * nothing built. Needs no loaded model: a hit parses no ONNX file. */
gaio_status engine_cache_find(const char *dir, const char *model_path, engine_cache_entry *entry, gaio_context *ctx,
                              int device, const gaio_engine_options *options, gaio_engine **out,
                              engine_cache_result *res);

#endif
