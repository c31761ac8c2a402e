/* Engines and execution contexts (gaio_engine_*): every model of the onnxruntime
 * reference (tests/model/model_ref.h) built as an engine in the model's precision, and
 *   1. engines and contexts of several models made, run and released in one process,
 *      in mixed orders (a context released with its run in flight, an engine released
 *      before its context), from several threads at once: every output held to
 *      onnxruntime's (the regression test of a double free in exec creation);
 *   2. several contexts of one engine running at the same time on their own streams,
 *      each giving the bits of a lone context's run; device memory growing by an arena
 *      a context, not by the weights;
 *   3. an engine built asynchronously, released before its build ends;
 *   4. an engine saved and loaded: in this process and in another one (this binary
 *      again, GAIO_ENGINE_CHILD), giving the same bits; truncated, corrupted,
 *      foreign-version and missing files refused with a status and a message;
 *   5. bad arguments refused naming the function, nothing enqueued.
 * Seeded orders: GAIO_TEST_SEED, else the clock (printed). */
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "model_ref.h"

#define MAX_MODELS 64 /* tests/model/make_models.py's good models, with room to grow */
#define THREADS 4
#define ROUNDS 2
#define CONTEXTS 3
#define WAIT_NS (120ll * 1000 * 1000 * 1000)

extern char **environ;

typedef struct models {
    ref_model m[MAX_MODELS];
    gaio_model *loaded[MAX_MODELS];
    int n;
} models;

static void collect(void *user, ref_model *r) {
    models *ms = user;
    CHECK(ms->n < MAX_MODELS);
    ms->m[ms->n++] = *r;
    r->nin = r->nout = 0; /* the copy owns the data now */
}

static gaio_model *load(const ref_model *r) {
    char path[2048];
    CHECK(snprintf(path, sizeof path, "%s/%s", model_dir(), r->file) < (int)sizeof path);
    gaio_model *m = NULL;
    OK(gaio_model_load(path, &m));
    return m;
}

static gaio_engine_options options_of(const ref_model *r, uint32_t flags) {
    gaio_engine_options o;
    memset(&o, 0, sizeof o);
    o.batch = r->batch, o.precision = GAIO_MODEL_PRECISION_MODEL, o.flags = flags;
    return o;
}

static void wait_ok(const char *what, gaio_future *f) {
    CHECK(f != NULL);
    gaio_status st = gaio_future_wait(f, WAIT_NS);
    if (st != GAIO_OK) {
        fprintf(stderr, "%s: the future gave %s: %s\n", what, gaio_status_string(st), gaio_future_message(f));
        exit(1);
    }
    OK(gaio_future_release(f));
}

/* One run of x on s over fresh tensors; the outputs' bytes in got[] (free each). */
static void run_once(gaio_context *ctx, gaio_stream *s, gaio_model_exec *x, const ref_model *r, unsigned char **got) {
    ref_bound b;
    ref_bind(ctx, s, r, &b);
    gaio_future *done = NULL;
    OK(gaio_model_run(x, s, b.in, r->nin, b.out, r->nout, &done));
    wait_ok(r->name, done);
    for (int i = 0; i < r->nout; i++) got[i] = ref_download(ctx, s, b.out_buf[i], r->out[i].bytes);
    ref_unbind(r, &b);
}

static void expect_reference(const ref_model *r, const char *what, unsigned char **got) {
    for (int i = 0; i < r->nout; i++) ref_compare(r->name, what, i, &r->out[i], got[i]);
}

static void free_outputs(const ref_model *r, unsigned char **got) {
    for (int i = 0; i < r->nout; i++) free(got[i]);
}

/* ---- 1. many models, mixed orders, several threads ---- */

typedef struct worker {
    gaio_context *ctx;
    models *ms;
    unsigned seed;
    int id;
} worker;

static unsigned next_rand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 16;
}

static void *mixed_worker(void *arg) {
    worker *w = arg;
    gaio_stream *s;
    OK(gaio_stream_create(w->ctx, 0, 0, &s));
    for (int round = 0; round < ROUNDS; round++) {
        int order[MAX_MODELS];
        for (int i = 0; i < w->ms->n; i++) order[i] = i;
        for (int i = w->ms->n - 1; i > 0; i--) { /* a shuffle of the models, the thread's own */
            int j = (int)(next_rand(&w->seed) % (unsigned)(i + 1)), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int k = 0; k < w->ms->n; k++) {
            const ref_model *r = &w->ms->m[order[k]];
            unsigned how = next_rand(&w->seed) % 4;
            gaio_engine *e = NULL;
            gaio_engine_options o = options_of(r, how & 1 ? GAIO_ENGINE_NO_TUNE : 0);
            OK(gaio_engine_build(w->ms->loaded[order[k]], w->ctx, &o, &e));
            gaio_model_exec *x = NULL;
            OK(gaio_engine_create_exec(e, &x));
            if (how & 2) OK(gaio_engine_release(e)); /* the context holds it */
            ref_bound b;
            ref_bind(w->ctx, s, r, &b);
            gaio_future *done = NULL;
            OK(gaio_model_run(x, s, b.in, r->nin, b.out, r->nout, &done));
            OK(gaio_model_exec_release(x)); /* the run may be in flight */
            wait_ok(r->name, done);
            unsigned char *got[REF_MAX_IO];
            for (int i = 0; i < r->nout; i++) got[i] = ref_download(w->ctx, s, b.out_buf[i], r->out[i].bytes);
            expect_reference(r, "mixed-order run", got);
            free_outputs(r, got);
            ref_unbind(r, &b);
            if (!(how & 2)) OK(gaio_engine_release(e));
        }
    }
    OK(gaio_stream_release(s));
    return NULL;
}

static void test_mixed(gaio_context *ctx, models *ms, unsigned seed) {
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ctx, ms, seed + 7919u * (unsigned)i, i};
        CHECK(pthread_create(&th[i], NULL, mixed_worker, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) CHECK(pthread_join(th[i], NULL) == 0);
    printf("mixed: %d threads x %d rounds x %d models built, run and released in shuffled orders\n", THREADS, ROUNDS,
           ms->n);
}

/* ---- 2. contexts of one engine at once ---- */

/* The model with the most convolutions: the one whose contexts share the most. */
static int pick_model(models *ms, gaio_context *ctx) {
    int best = 0, best_convs = -1;
    for (int i = 0; i < ms->n; i++) {
        gaio_engine *e = NULL;
        gaio_engine_options o = options_of(&ms->m[i], GAIO_ENGINE_NO_TUNE);
        OK(gaio_engine_build(ms->loaded[i], ctx, &o, &e));
        gaio_engine_info info;
        OK(gaio_engine_get_info(e, &info));
        if (info.convs > best_convs) best = i, best_convs = info.convs;
        OK(gaio_engine_release(e));
    }
    return best;
}

static size_t device_in_use(gaio_context *ctx, int *known) {
    gaio_pool_stats st;
    *known = gaio_context_pool_stats(ctx, GAIO_MEM_DEVICE, &st) == GAIO_OK;
    return *known ? st.bytes_in_use : 0;
}

static void test_contexts(gaio_context *ctx, const ref_model *r, gaio_model *m, gaio_model_precision precision) {
    gaio_engine *e = NULL;
    gaio_engine_options o = options_of(r, 0);
    o.precision = precision;
    OK(gaio_engine_build(m, ctx, &o, &e));
    gaio_engine_info info;
    OK(gaio_engine_get_info(e, &info));
    CHECK(info.steps >= 1 && info.steps <= info.nodes && info.weight_bytes > 0 && info.loaded == 0);
    CHECK(info.f16_accumulation == (precision == GAIO_MODEL_PRECISION_F16_FAST));
    gaio_stream *s[CONTEXTS];
    gaio_model_exec *x[CONTEXTS];
    int known = 0;
    size_t first = 0;
    for (int i = 0; i < CONTEXTS; i++) {
        OK(gaio_stream_create(ctx, 0, 0, &s[i]));
        size_t before = device_in_use(ctx, &known);
        OK(gaio_engine_create_exec(e, &x[i]));
        size_t grew = device_in_use(ctx, &known) - before;
        if (i == 0) first = grew;
        /* An arena (the pool rounds up by at most a quarter), never the weights again.
         * A context that replays a CUDA graph has run its steps once on its private
         * stream, whose library workspace (dnn_state.h) comes from the context's pool
         * too: the same for every context. */
        bool arena = grew >= info.arena_bytes && grew <= info.arena_bytes + info.arena_bytes / 4 + 256;
        bool with_workspace = info.cuda_graph && grew >= info.arena_bytes && grew == first;
        if (known && !arena && !with_workspace) {
            fprintf(stderr,
                    "%s: context %d took %zu device bytes (the first %zu): its arena is %zu, the engine's "
                    "weights %zu\n",
                    r->name, i, grew, first, info.arena_bytes, info.weight_bytes);
            exit(1);
        }
    }
    unsigned char *lone[REF_MAX_IO];
    run_once(ctx, s[0], x[0], r, lone);
    if (precision == GAIO_MODEL_PRECISION_MODEL) expect_reference(r, "one context", lone);
    /* All contexts at once, twice each, nothing ordering them. */
    ref_bound b[CONTEXTS];
    gaio_future *done[CONTEXTS][2];
    for (int i = 0; i < CONTEXTS; i++) ref_bind(ctx, s[i], r, &b[i]);
    for (int rep = 0; rep < 2; rep++)
        for (int i = 0; i < CONTEXTS; i++) OK(gaio_model_run(x[i], s[i], b[i].in, r->nin, b[i].out, r->nout, &done[i][rep]));
    for (int i = 0; i < CONTEXTS; i++) {
        wait_ok(r->name, done[i][0]);
        wait_ok(r->name, done[i][1]);
        for (int k = 0; k < r->nout; k++) {
            unsigned char *got = ref_download(ctx, s[i], b[i].out_buf[k], r->out[k].bytes);
            ref_expect_same_bits(r->name, "a context among several", k, &r->out[k], lone[k], got);
            free(got);
        }
        ref_unbind(r, &b[i]);
    }
    free_outputs(r, lone);
    /* Released in another order than made, the engine first. */
    OK(gaio_engine_release(e));
    for (int i = CONTEXTS - 1; i >= 0; i--) {
        OK(gaio_model_exec_release(x[i]));
        OK(gaio_stream_release(s[i]));
    }
    printf("contexts: %d of one %s engine (%s) ran at once, same bits as one; weights %zu bytes once, arena %zu a "
           "context%s\n", CONTEXTS, r->name,
           precision == GAIO_MODEL_PRECISION_F16        ? "f16"
           : precision == GAIO_MODEL_PRECISION_F16_FAST ? "f16-fast"
                                                        : "model's precision",
           info.weight_bytes, info.arena_bytes, known ? "" : " (no pool statistics on this backend)");
}

/* ---- 3. asynchronous builds ---- */

static void test_async(gaio_context *ctx, const ref_model *r, gaio_model *m) {
    gaio_engine_options o = options_of(r, 0);
    gaio_engine *e = NULL;
    gaio_future *built = NULL;
    OK(gaio_engine_build_async(m, ctx, &o, &e, &built));
    CHECK(e != NULL && built != NULL);
    gaio_model_exec *x = NULL;
    OK(gaio_engine_create_exec(e, &x)); /* waits for the build */
    wait_ok("an asynchronous build", built); /* completes right after the engine is ready */
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    unsigned char *got[REF_MAX_IO];
    run_once(ctx, s, x, r, got);
    expect_reference(r, "asynchronously built", got);
    free_outputs(r, got);
    OK(gaio_model_exec_release(x));
    OK(gaio_engine_release(e));
    /* Released while building: the build finishes on its own, then the engine goes. */
    OK(gaio_engine_build_async(m, ctx, &o, &e, &built));
    OK(gaio_engine_release(e));
    wait_ok("a build whose engine was released", built);
    /* A wait from another thread's future, then inspection. */
    OK(gaio_engine_build_async(m, ctx, &o, &e, &built));
    wait_ok("an asynchronous build", built);
    gaio_engine_info info;
    OK(gaio_engine_get_info(e, &info));
    CHECK(info.build_seconds > 0 && info.steps >= 1);
    OK(gaio_engine_release(e));
    OK(gaio_stream_release(s));
    printf("async: built off the caller's thread, used, and released mid-build\n");
}

/* ---- 4. save and load ---- */

static void write_file(const char *path, const unsigned char *p, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n && fclose(f) == 0);
}

static void expect_refused(gaio_context *ctx, const char *path, gaio_status want, const char *fragment) {
    gaio_engine *e = (gaio_engine *)1;
    gaio_status st = gaio_engine_load(path, ctx, &e);
    if (st != want || e != NULL || !strstr(gaio_last_error(), fragment) || !strstr(gaio_last_error(), "gaio_engine_load")) {
        fprintf(stderr, "loading %s: %s (%s), want %s saying '%s'\n", path, gaio_status_string(st), gaio_last_error(),
                gaio_status_string(want), fragment);
        exit(1);
    }
}

/* The child: loads the engine, runs it on the reference inputs and writes the outputs. */
static void child(int device, const char *engine, const char *outputs, models *ms, const char *name) {
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    const ref_model *r = NULL;
    for (int i = 0; i < ms->n; i++)
        if (!strcmp(ms->m[i].name, name)) r = &ms->m[i];
    CHECK(r != NULL);
    gaio_engine *e = NULL;
    OK(gaio_engine_load(engine, ctx, &e));
    gaio_engine_info info;
    OK(gaio_engine_get_info(e, &info));
    CHECK(info.loaded == 1);
    gaio_model_exec *x = NULL;
    OK(gaio_engine_create_exec(e, &x));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    unsigned char *got[REF_MAX_IO];
    run_once(ctx, s, x, r, got);
    FILE *f = fopen(outputs, "wb");
    CHECK(f);
    for (int i = 0; i < r->nout; i++) CHECK(fwrite(got[i], 1, r->out[i].bytes, f) == r->out[i].bytes);
    CHECK(fclose(f) == 0);
    free_outputs(r, got);
    OK(gaio_model_exec_release(x));
    OK(gaio_engine_release(e));
    OK(gaio_stream_release(s));
    OK(gaio_context_release(ctx));
}

static void test_save_load(int device, gaio_context *ctx, const ref_model *r, gaio_model *m) {
    char dir[] = "/tmp/gaio-engine-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], bad[256], outs[256];
    snprintf(path, sizeof path, "%s/model.engine", dir);
    snprintf(bad, sizeof bad, "%s/bad.engine", dir);
    snprintf(outs, sizeof outs, "%s/outputs.bin", dir);
    gaio_engine *e = NULL;
    gaio_engine_options o = options_of(r, 0);
    OK(gaio_engine_build(m, ctx, &o, &e));
    OK(gaio_engine_save(e, path));
    gaio_stream *s;
    OK(gaio_stream_create(ctx, 0, 0, &s));
    gaio_model_exec *x = NULL;
    OK(gaio_engine_create_exec(e, &x));
    unsigned char *built[REF_MAX_IO], *loaded[REF_MAX_IO];
    run_once(ctx, s, x, r, built);
    expect_reference(r, "built engine", built);
    OK(gaio_model_exec_release(x));

    gaio_engine *l = NULL;
    OK(gaio_engine_load(path, ctx, &l));
    gaio_engine_info bi, li;
    OK(gaio_engine_get_info(e, &bi));
    OK(gaio_engine_get_info(l, &li));
    CHECK(li.loaded == 1 && li.steps == bi.steps && li.weight_bytes == bi.weight_bytes &&
          li.arena_bytes == bi.arena_bytes && li.batch == bi.batch && li.dtype == bi.dtype && li.convs == bi.convs);
    for (int i = 0; i < bi.steps; i++) {
        gaio_engine_step a, b;
        OK(gaio_engine_get_step(e, i, &a));
        OK(gaio_engine_get_step(l, i, &b));
        CHECK(!strcmp(a.name, b.name) && !strcmp(a.ops, b.ops) && !strcmp(a.kernel, b.kernel));
    }
    gaio_model_io bio, lio;
    OK(gaio_engine_input(e, 0, &bio));
    OK(gaio_engine_input(l, 0, &lio));
    CHECK(!strcmp(bio.name, lio.name) && bio.ndim == lio.ndim && !memcmp(bio.shape, lio.shape, sizeof bio.shape));
    for (int d = 0; d < bio.ndim; d++) CHECK(bio.shape[d] >= 1); /* resolved */
    OK(gaio_engine_create_exec(l, &x));
    run_once(ctx, s, x, r, loaded);
    for (int i = 0; i < r->nout; i++) ref_expect_same_bits(r->name, "loaded engine", i, &r->out[i], built[i], loaded[i]);
    free_outputs(r, loaded);
    OK(gaio_model_exec_release(x));
    OK(gaio_engine_release(l));

    /* Another process: this binary again, told to load and run it. */
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    char devarg[16];
    snprintf(devarg, sizeof devarg, "%s", props.kind == GAIO_DEVICE_CUDA ? "--gpu" : "--host");
    char env_engine[512], env_out[512], env_model[512], env_dir[2048];
    snprintf(env_engine, sizeof env_engine, "GAIO_ENGINE_CHILD=%s", path);
    snprintf(env_out, sizeof env_out, "GAIO_ENGINE_CHILD_OUT=%s", outs);
    snprintf(env_model, sizeof env_model, "GAIO_ENGINE_CHILD_MODEL=%s", r->name);
    snprintf(env_dir, sizeof env_dir, "GAIO_MODEL_DIR=%s", model_dir());
    /* Under AddressSanitizer, the child leaves leak checking to this process (which loads
     * the same engine above): LeakSanitizer's tracer intermittently crashed at the
     * child's exit on the 2-core CI machine under load ("Tracer caught signal 11" in its
     * stop-the-world, about 1 run in 5 with 4 tests in parallel), failing the test after
     * the child had printed PASS. Later flags in ASAN_OPTIONS override earlier ones. */
    const char *asan = getenv("ASAN_OPTIONS");
    char env_asan[1024];
    snprintf(env_asan, sizeof env_asan, "ASAN_OPTIONS=%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
    char *cenv[] = {env_engine, env_out, env_model, env_dir, env_asan, NULL};
    char self[1024];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0);
    self[len] = 0;
    char *argv[] = {self, devarg, NULL};
    /* The environment: ours with the child's variables in front. */
    size_t nenv = 0;
    while (environ[nenv]) nenv++;
    char **envp = calloc(nenv + 6, sizeof *envp);
    CHECK(envp);
    size_t k = 0;
    for (int i = 0; cenv[i]; i++) envp[k++] = cenv[i];
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "GAIO_ENGINE_CHILD", 17) && strncmp(environ[i], "GAIO_MODEL_DIR=", 15) &&
            strncmp(environ[i], "ASAN_OPTIONS=", 13))
            envp[k++] = environ[i];
    pid_t pid;
    CHECK(posix_spawn(&pid, self, NULL, NULL, argv, envp) == 0);
    free(envp);
    int wstatus = 0;
    CHECK(waitpid(pid, &wstatus, 0) == pid);
    if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
        fprintf(stderr, "the process that loaded the engine failed (status 0x%x)\n", wstatus);
        exit(1);
    }
    size_t n = 0;
    unsigned char *theirs = read_all(outs, &n);
    size_t at = 0;
    for (int i = 0; i < r->nout; i++) {
        CHECK(at + r->out[i].bytes <= n);
        ref_expect_same_bits(r->name, "engine loaded by another process", i, &r->out[i], built[i], theirs + at);
        at += r->out[i].bytes;
    }
    CHECK(at == n);
    free(theirs);
    free_outputs(r, built);

    /* Files that are not engines, or not this one. */
    size_t size = 0;
    unsigned char *good = read_all(path, &size);
    CHECK(size > 64);
    write_file(bad, good, size / 2);
    expect_refused(ctx, bad, GAIO_ERR_INVALID_ARG, "truncated");
    good[size - 100] ^= 0x40;
    write_file(bad, good, size);
    expect_refused(ctx, bad, GAIO_ERR_INVALID_ARG, "checksum");
    good[size - 100] ^= 0x40;
    good[12] ^= 1; /* gaio's version */
    write_file(bad, good, size);
    expect_refused(ctx, bad, GAIO_ERR_NOT_SUPPORTED, "build the engine again");
    good[12] ^= 1;
    good[0] = 'X';
    write_file(bad, good, size);
    expect_refused(ctx, bad, GAIO_ERR_INVALID_ARG, "header");
    write_file(bad, good, 0);
    expect_refused(ctx, bad, GAIO_ERR_INVALID_ARG, "header");
    snprintf(bad, sizeof bad, "%s/missing.engine", dir);
    expect_refused(ctx, bad, GAIO_ERR_NOT_FOUND, "missing.engine");
    expect_refused(ctx, dir, GAIO_ERR_INVALID_ARG, "regular file");
    free(good);
    gaio_engine *none = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_load_memory("GAIOENGN", 8, ctx, &none), "gaio_engine_load_memory");
    CHECK(none == NULL);

    /* An engine of another device kind: a host engine on a GPU, or the reverse. */
    gaio_device_props mine;
    OK(gaio_device_get_props(device, &mine));
    int count = 0;
    OK(gaio_device_count(&count));
    for (int d = 0; d < count; d++) {
        gaio_device_props p;
        OK(gaio_device_get_props(d, &p));
        if (p.kind == mine.kind) continue;
        gaio_context *octx = NULL;
        OK(gaio_context_create(d, NULL, &octx));
        expect_refused(octx, path, GAIO_ERR_NOT_SUPPORTED, "build the engine on this device");
        OK(gaio_context_release(octx));
        break;
    }
    OK(gaio_engine_release(e));
    OK(gaio_stream_release(s));
    unlink(path), unlink(outs);
    snprintf(bad, sizeof bad, "%s/bad.engine", dir);
    unlink(bad);
    CHECK(rmdir(dir) == 0);
    printf("save / load: %s reloaded here and in another process with the same bits; bad files refused\n", r->name);
}

/* ---- 5. bad arguments ---- */

static void test_bad(gaio_context *ctx, const ref_model *r, gaio_model *m) {
    gaio_engine *e = (gaio_engine *)1;
    gaio_engine_options o = options_of(r, 0);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(NULL, ctx, &o, &e), "gaio_engine_build");
    CHECK(e == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, NULL, &o, &e), "gaio_engine_build");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, NULL, &e), "gaio_engine_build");
    o.precision = (gaio_model_precision)7;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, &o, &e), "gaio_engine_build");
    o = options_of(r, 1u << 9);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, &o, &e), "gaio_engine_build");
    gaio_future *f = (gaio_future *)1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build_async(m, ctx, &o, &e, &f), "gaio_engine_build_async");
    CHECK(e == NULL && f == NULL);
    /* Shapes: unknown input, wrong rank, a fixed dimension changed. */
    gaio_model_io in;
    OK(gaio_model_input(m, 0, &in));
    gaio_engine_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.name = "no-such-input", sh.ndim = in.ndim;
    for (int d = 0; d < in.ndim; d++) sh.dims[d] = in.shape[d] < 0 ? 2 : in.shape[d];
    o = options_of(r, 0);
    o.shapes = &sh, o.nshapes = 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, &o, &e), "gaio_engine_build");
    CHECK(strstr(gaio_last_error(), "no-such-input") != NULL);
    sh.name = in.name, sh.ndim = in.ndim + 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, &o, &e), "gaio_engine_build");
    sh.ndim = in.ndim;
    sh.dims[in.ndim - 1] += 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, &o, &e), "gaio_engine_build");
    sh.dims[in.ndim - 1] -= 1;
    o.nshapes = -1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, &o, &e), "gaio_engine_build");
    /* The shapes as given build the engine they describe. */
    o.nshapes = 1;
    OK(gaio_engine_build(m, ctx, &o, &e));
    gaio_model_io got;
    OK(gaio_engine_input(e, 0, &got));
    CHECK(got.ndim == sh.ndim && !memcmp(got.shape, sh.dims, sizeof(int64_t) * (size_t)sh.ndim));
    gaio_engine_step step;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_get_step(e, -1, &step), "gaio_engine_get_step");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_get_step(e, 1 << 30, &step), "gaio_engine_get_step");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_input(e, 99, &got), "gaio_engine_input");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_save(e, ""), "gaio_engine_save");
    FAILS(GAIO_ERR_SYSTEM, gaio_engine_save(e, "/nonexistent-dir/x.engine"), "gaio_engine_save");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_create_exec(NULL, NULL), "gaio_engine_create_exec");
    /* A stream of another context: refused, nothing enqueued. */
    gaio_model_exec *x = NULL;
    OK(gaio_engine_create_exec(e, &x));
    int dev = 0;
    OK(gaio_context_device(ctx, &dev));
    gaio_context *other;
    OK(gaio_context_create(dev, NULL, &other));
    gaio_stream *os;
    OK(gaio_stream_create(other, 0, 0, &os));
    ref_bound b;
    ref_bind(other, os, r, &b);
    gaio_future *done = (gaio_future *)1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_run(x, os, b.in, r->nin, b.out, r->nout, &done), "gaio_model_run");
    CHECK(done == NULL && strstr(gaio_last_error(), "context") != NULL);
    OK(gaio_stream_synchronize(os));
    ref_unbind(r, &b);
    OK(gaio_stream_release(os));
    OK(gaio_context_release(other));
    /* Shapes of a context: its engine's own only, without a profile. */
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_set_shapes(NULL, &sh, 1), "gaio_model_exec_set_shapes");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_set_shapes(x, NULL, 1), "gaio_model_exec_set_shapes");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_set_shapes(x, &sh, -1), "gaio_model_exec_set_shapes");
    gaio_engine_shape other_sh = sh;
    other_sh.name = "no-such-input";
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_set_shapes(x, &other_sh, 1), "gaio_model_exec_set_shapes");
    CHECK(strstr(gaio_last_error(), "no-such-input") != NULL);
    other_sh = sh, other_sh.ndim = sh.ndim + 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_set_shapes(x, &other_sh, 1), "gaio_model_exec_set_shapes");
    OK(gaio_model_exec_set_shapes(x, &sh, 1));
    other_sh = sh, other_sh.dims[0] = sh.dims[0] + 1;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_set_shapes(x, &other_sh, 1), "gaio_model_exec_set_shapes");
    CHECK(strstr(gaio_last_error(), "without a profile") != NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_input(NULL, 0, &got), "gaio_model_exec_input");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_output(x, 99, &got), "gaio_engine_output");
    OK(gaio_model_exec_input(x, 0, &got));
    CHECK(got.ndim == sh.ndim && !memcmp(got.shape, sh.dims, sizeof(int64_t) * (size_t)sh.ndim));
    OK(gaio_model_exec_release(x));
    OK(gaio_engine_release(e));
    /* A profile: a bad range is refused; a good one's smallest shape binds a context. */
    if (in.shape[0] < 0) {
        gaio_engine_shape ps = sh;
        for (int d = 0; d < sh.ndim; d++) ps.min_dims[d] = ps.max_dims[d] = sh.dims[d];
        ps.min_dims[0] = 1, ps.max_dims[0] = sh.dims[0] + 2;
        o.shapes = &ps;
        gaio_engine_shape bad = ps;
        bad.min_dims[0] = sh.dims[0] + 1;
        o.shapes = &bad;
        FAILS(GAIO_ERR_INVALID_ARG, gaio_engine_build(m, ctx, &o, &e), "gaio_engine_build");
        CHECK(strstr(gaio_last_error(), "min <= opt <= max") != NULL);
        o.shapes = &ps;
        OK(gaio_engine_build(m, ctx, &o, &e));
        FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_engine_save(e, "/nonexistent-dir/x.engine"), "gaio_engine_save");
        OK(gaio_engine_create_exec(e, &x));
        gaio_engine_shape to = sh;
        to.dims[0] = 1;
        OK(gaio_model_exec_set_shapes(x, &to, 1));
        OK(gaio_model_exec_input(x, 0, &got));
        CHECK(got.shape[0] == 1);
        to.dims[0] = sh.dims[0] + 3;
        FAILS(GAIO_ERR_INVALID_ARG, gaio_model_exec_set_shapes(x, &to, 1), "gaio_model_exec_set_shapes");
        OK(gaio_model_exec_release(x));
        OK(gaio_engine_release(e));
        printf("profile: batch 1 to %lld bound and refused past it\n", (long long)(sh.dims[0] + 2));
    }
    OK(gaio_engine_release(NULL));
    OK(gaio_model_exec_release(NULL));
    printf("bad arguments: refused with their function named\n");
}

static void run(int device) {
    gaio_model *probe = NULL;
    gaio_status st = gaio_model_load("/nonexistent/gaio-probe.onnx", &probe);
    if (st == GAIO_ERR_NOT_SUPPORTED && strstr(gaio_last_error(), "ONNX")) test_skip("%s", gaio_last_error());
    models *ms = calloc(1, sizeof *ms);
    CHECK(ms);
    int nskip = ref_foreach(collect, ms);
    CHECK(ms->n >= 3);
    const char *child_engine = getenv("GAIO_ENGINE_CHILD");
    if (child_engine) {
        child(device, child_engine, getenv("GAIO_ENGINE_CHILD_OUT"), ms, getenv("GAIO_ENGINE_CHILD_MODEL"));
    } else {
        const char *env = getenv("GAIO_TEST_SEED");
        unsigned seed = env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL);
        printf("seed %u (GAIO_TEST_SEED replays); %d models (%d not checked by onnxruntime)\n", seed, ms->n, nskip);
        gaio_context *ctx;
        OK(gaio_context_create(device, NULL, &ctx));
        for (int i = 0; i < ms->n; i++) ms->loaded[i] = load(&ms->m[i]);
        int pick = pick_model(ms, ctx);
        const ref_model *r = &ms->m[pick];
        gaio_model *m = ms->loaded[pick];
        test_mixed(ctx, ms, seed);
        test_contexts(ctx, r, m, GAIO_MODEL_PRECISION_MODEL);
        test_contexts(ctx, r, m, GAIO_MODEL_PRECISION_F16);
        test_contexts(ctx, r, m, GAIO_MODEL_PRECISION_F16_FAST);
        test_async(ctx, r, m);
        test_save_load(device, ctx, r, m);
        test_bad(ctx, r, m);
        for (int i = 0; i < ms->n; i++) OK(gaio_model_release(ms->loaded[i]));
        OK(gaio_context_release(ctx));
    }
    for (int i = 0; i < ms->n; i++) ref_free(&ms->m[i]);
    free(ms);
}
