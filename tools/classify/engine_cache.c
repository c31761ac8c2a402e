/* The engine cache of `gaio classify`: see engine_cache.h. */
#include "engine_cache.h"
#include "cli_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- FNV-1a 128 ---------------------------------------------------------------- */

__extension__ typedef unsigned __int128 u128;

static u128 fnv_get(const fnv128 *h) { return ((u128)h->hi << 64) | h->lo; }

static void fnv_set(fnv128 *h, u128 v) { h->hi = (uint64_t)(v >> 64), h->lo = (uint64_t)v; }

void fnv128_init(fnv128 *h) { h->hi = 0x6c62272e07bb0142ull, h->lo = 0x62b821756295c58dull; }

void fnv128_update(fnv128 *h, const void *data, size_t size) {
    const unsigned char *p = data;
    u128 v = fnv_get(h);
    /* v * (2^88 + 0x13b), modulo 2^128. */
    for (size_t i = 0; i < size; i++) {
        v ^= p[i];
        v = v * 0x13bu + (v << 88);
    }
    fnv_set(h, v);
}

void fnv128_hex(const fnv128 *h, char hex[33]) {
    snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h->hi, (unsigned long long)h->lo);
}

/* ---- paths ------------------------------------------------------------------- */

bool engine_cache_default_dir(char *buf, size_t size) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(buf, size, "%s/gaio", xdg);
    else if (home && *home) n = snprintf(buf, size, "%s/.cache/gaio", home);
    else n = -1;
    if (n < 0 || (size_t)n >= size) {
        if (size) buf[0] = 0;
        return false;
    }
    return true;
}

/* mkdir -p: every missing component made (0755), an existing directory fine. */
static bool make_dirs(const char *dir, char *err, size_t errsize) {
    char path[1024];
    size_t len = strlen(dir);
    if (!len || len >= sizeof path) {
        snprintf(err, errsize, "the directory name is %s", len ? "too long" : "empty");
        return false;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char c = path[i];
        path[i] = 0;
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errsize, "cannot make %s: %s", path, strerror(errno));
            return false;
        }
        path[i] = c;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(err, errsize, "%s is not a directory", dir);
        return false;
    }
    return true;
}

/* ---- the key ------------------------------------------------------------------ */

static void add_text(fnv128 *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_text(fnv128 *h, const char *fmt, ...) {
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    fnv128_update(h, line, len);
    fnv128_update(h, "\n", 1);
}

/* The file's bytes hashed at memory speed: four FNV-1a 128 lanes over interleaved
 * 64-bit words (word k of each 32 bytes into lane k; four independent multiply chains),
 * then the lanes' states, the tail that fills no 32 bytes and the length through
 * FNV-1a 128. Each lane's step is a bijection of its state for a given word, so two
 * files that differ in one word always differ. Byte-wise FNV-1a would run at ~200 MB/s:
 * half a second of every cached start for ResNet-50. */
typedef struct file_hash {
    u128 lane[4];
    unsigned char tail[32];
    size_t ntail;
    uint64_t bytes;
} file_hash;

static void file_hash_blocks(file_hash *f, const unsigned char *p, size_t n) {
    const u128 prime = ((u128)1 << 88) + 0x13bu;
    u128 a = f->lane[0], b = f->lane[1], c = f->lane[2], d = f->lane[3];
    for (size_t i = 0; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        a = (a ^ w[0]) * prime, b = (b ^ w[1]) * prime, c = (c ^ w[2]) * prime, d = (d ^ w[3]) * prime;
    }
    f->lane[0] = a, f->lane[1] = b, f->lane[2] = c, f->lane[3] = d;
}

static void file_hash_update(file_hash *f, const unsigned char *p, size_t n) {
    f->bytes += n;
    if (f->ntail) {
        size_t take = 32 - f->ntail < n ? 32 - f->ntail : n;
        memcpy(f->tail + f->ntail, p, take);
        f->ntail += take, p += take, n -= take;
        if (f->ntail < 32) return;
        file_hash_blocks(f, f->tail, 32);
        f->ntail = 0;
    }
    size_t whole = n & ~(size_t)31;
    file_hash_blocks(f, p, whole);
    memcpy(f->tail, p + whole, n - whole);
    f->ntail = n - whole;
}

/* The file's hash (hex) and byte count. */
static bool hash_file(const char *path, char hex[33], uint64_t *bytes, char *err, size_t errsize) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errsize, "cannot read %s: %s", path, strerror(errno));
        return false;
    }
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    if (!buf) {
        close(fd);
        snprintf(err, errsize, "out of host memory");
        return false;
    }
    file_hash f;
    memset(&f, 0, sizeof f);
    fnv128 basis;
    fnv128_init(&basis);
    for (int k = 0; k < 4; k++) f.lane[k] = fnv_get(&basis) + (u128)k; /* distinct lanes */
    bool ok = true;
    for (;;) {
        ssize_t n = read(fd, buf, CHUNK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(err, errsize, "cannot read %s: %s", path, strerror(errno));
            ok = false;
            break;
        }
        if (n == 0) break;
        file_hash_update(&f, buf, (size_t)n);
    }
    free(buf);
    close(fd);
    fnv128 h;
    fnv128_init(&h);
    for (int k = 0; k < 4; k++) {
        fnv128 l;
        fnv_set(&l, f.lane[k]);
        uint64_t words[2] = {l.hi, l.lo};
        fnv128_update(&h, words, sizeof words);
    }
    fnv128_update(&h, f.tail, f.ntail);
    fnv128_update(&h, &f.bytes, sizeof f.bytes);
    fnv128_hex(&h, hex);
    *bytes = f.bytes;
    return ok;
}

void engine_cache_hash_model(const char *model_path, engine_cache_model *out) {
    memset(out, 0, sizeof *out);
    out->ok = hash_file(model_path, out->hex, &out->bytes, out->err, sizeof out->err);
}

static bool make_key(const char *model_path, const engine_cache_model *hashed, int device, const gaio_engine_options *o,
                     char hex[33], char *err, size_t errsize) {
    engine_cache_model here;
    if (!hashed) engine_cache_hash_model(model_path, &here), hashed = &here;
    if (!hashed->ok) {
        snprintf(err, errsize, "%s", hashed->err);
        return false;
    }
    const char *fhex = hashed->hex;
    uint64_t bytes = hashed->bytes;

    gaio_device_props p;
    gaio_status st = gaio_device_get_props(device, &p);
    if (st != GAIO_OK) {
        snprintf(err, errsize, "gaio_device_get_props: %s", gaio_last_error());
        return false;
    }
    const char *dnn = "";
    gaio_status dst = gaio_dnn_library_status(p.kind == GAIO_DEVICE_CUDA ? GAIO_DNN_CUDNN : GAIO_DNN_ONEDNN, &dnn);
    const char *graph = getenv("GAIO_MODEL_CUDA_GRAPH");

    fnv128 h;
    fnv128_init(&h);
    add_text(&h, "gaio engine cache 1, model hash fnv128x4");
    add_text(&h, "model %s %llu", fhex, (unsigned long long)bytes);
    add_text(&h, "batch %lld precision %d layout %d flags %u", (long long)o->batch, (int)o->precision, (int)o->layout,
             (unsigned)o->flags);
    for (int32_t i = 0; i < o->nshapes && o->shapes; i++) {
        const gaio_engine_shape *s = &o->shapes[i];
        add_text(&h, "shape %s %d", s->name ? s->name : "", s->ndim);
        for (int32_t d = 0; d < s->ndim && d < GAIO_MODEL_MAX_NDIM; d++) add_text(&h, "%lld", (long long)s->dims[d]);
    }
    add_text(&h, "device %d %s #%d sm %d.%d", (int)p.kind, p.name, p.ordinal, p.compute_major, p.compute_minor);
    add_text(&h, "gaio %d library %d", GAIO_VERSION, gaio_version());
    add_text(&h, "dnn %d %s", (int)dst, dnn ? dnn : "");
    add_text(&h, "GAIO_MODEL_CUDA_GRAPH %s", graph ? graph : "(unset)");
    fnv128_hex(&h, hex);
    return true;
}

/* ---- get ------------------------------------------------------------------------ */


/* gaio's message on one line, at most n characters of it. */
static void one_line(char *dst, size_t size, const char *src) {
    snprintf(dst, size, "%s", src && *src ? src : "no message");
    for (char *c = dst; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

/* The whole file into memory: false with why set when it cannot be read. */
static bool read_all(const char *path, void **data, size_t *size, char *why, size_t whysize) {
    *data = NULL, *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        snprintf(why, whysize, "cannot read %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return false;
    }
    size_t n = (size_t)sb.st_size, done = 0;
    unsigned char *p = malloc(n ? n : 1);
    if (!p) {
        snprintf(why, whysize, "cannot read %s: out of host memory for %zu bytes", path, n);
        close(fd);
        return false;
    }
    while (done < n) {
        ssize_t r = read(fd, p + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* shorter than it was: gaio_engine_load_memory says so */
        done += (size_t)r;
    }
    close(fd);
    *data = p, *size = done;
    return true;
}

void engine_cache_lookup(const char *dir, const char *model_path, const engine_cache_model *hashed, int device,
                         const gaio_engine_options *options, engine_cache_entry *out) {
    memset(out, 0, sizeof *out);
    char hex[33];
    double k0 = cli_now_s();
    out->use = dir && make_key(model_path, hashed, device, options, hex, out->why, sizeof out->why);
    out->key_seconds = cli_now_s() - k0;
    if (!out->use) return;
    int n = snprintf(out->path, sizeof out->path, "%s/%s.engine", dir, hex);
    if (n < 0 || (size_t)n >= sizeof out->path) {
        snprintf(out->why, sizeof out->why, "the cache directory's name is too long");
        out->path[0] = 0;
        out->use = false;
        return;
    }
    struct stat sb;
    if (stat(out->path, &sb) != 0) {
        if (errno != ENOENT) { /* only "no such file" is a plain miss */
            snprintf(out->why, sizeof out->why, "cannot read %s: %s", out->path, strerror(errno));
            out->use = false;
        }
        return;
    }
    out->found = read_all(out->path, &out->data, &out->size, out->why, sizeof out->why);
    if (!out->found) out->use = false;
}

void engine_cache_entry_free(engine_cache_entry *e) {
    free(e->data);
    e->data = NULL, e->size = 0, e->found = false;
}

gaio_status engine_cache_find(const char *dir, const char *model_path, engine_cache_entry *entry, gaio_context *ctx,
                              int device, const gaio_engine_options *options, gaio_engine **out,
                              engine_cache_result *res) {
    return engine_cache_get(dir, model_path, entry, NULL, ctx, device, options, out, res);
}

gaio_status engine_cache_get(const char *dir, const char *model_path, engine_cache_entry *entry, gaio_model *m,
                             gaio_context *ctx, int device, const gaio_engine_options *options, gaio_engine **out,
                             engine_cache_result *res) {
    memset(res, 0, sizeof *res);
    *out = NULL;
    engine_cache_entry here;
    if (!entry) engine_cache_lookup(dir, model_path, NULL, device, options, &here), entry = &here;
    char why[1800]; /* why the cache was not used, or why the entry was stale */
    snprintf(why, sizeof why, "%s", entry->why);
    bool use = entry->use;
    snprintf(res->path, sizeof res->path, "%s", entry->path);

    /* A hit: the entry is there and loads. */
    if (entry->found) {
        double t0 = cli_now_s();
        gaio_status st = gaio_engine_load_memory(entry->data, entry->size, ctx, out);
        engine_cache_entry_free(entry);
        if (st == GAIO_OK) {
            res->loaded = true;
            res->seconds = cli_now_s() - t0;
            snprintf(res->note, sizeof res->note, "engine loaded from the cache, %s, in %.3f s", res->path,
                     res->seconds);
            return GAIO_OK;
        }
        *out = NULL;
        res->stale = true;
        char msg[600];
        one_line(msg, sizeof msg, gaio_last_error());
        snprintf(why, sizeof why, "%s (%s)", msg, gaio_status_string(st));
    }

    if (!m) return GAIO_ERR_NOT_FOUND; /* engine_cache_find: no build */
    double t0 = cli_now_s();
    gaio_status st = gaio_engine_build(m, ctx, options, out);
    res->seconds = cli_now_s() - t0;
    if (st != GAIO_OK) {
        *out = NULL;
        return st;
    }
    res->built = true;

    char saved[2600] = "";
    if (use) {
        char err[1200] = "";
        double s0 = cli_now_s();
        if (!make_dirs(dir, err, sizeof err)) {
            snprintf(saved, sizeof saved, "; not cached: %s", err);
        } else if ((st = gaio_engine_save(*out, res->path)) != GAIO_OK) {
            char msg[600];
            one_line(msg, sizeof msg, gaio_last_error());
            snprintf(saved, sizeof saved, "; not cached: gaio_engine_save %s: %s (%s)", res->path, msg,
                     gaio_status_string(st));
            if (res->stale) unlink(res->path); /* a stale entry would only be refused again */
        } else {
            res->saved = true;
            snprintf(saved, sizeof saved, ", saved to the cache, %s, in %.3f s", res->path, cli_now_s() - s0);
        }
    } else if (!dir) {
        snprintf(saved, sizeof saved, ", not cached");
    } else {
        snprintf(saved, sizeof saved, "; not cached: %s", why);
    }
    if (res->stale)
        snprintf(res->note, sizeof res->note, "cache entry %.1000s is stale: %.1500s; engine rebuilt in %.3f s%.2500s",
                 res->path, why, res->seconds, saved);
    else
        snprintf(res->note, sizeof res->note, "engine built in %.3f s%s", res->seconds, saved);
    return GAIO_OK;
}
