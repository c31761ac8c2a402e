/* Stream priorities on a one-worker pool (gaio_configure before the first
 * context): work of a more urgent stream that becomes ready while a normal
 * stream has a backlog runs before the rest of that backlog, both when it is
 * submitted while the backlog runs and when it is released by an event the
 * backlog records. Priorities out of range are rejected. Host functions record
 * the order in which things ran.
 *
 * On CUDA (--gpu): the range checks, and foreign streams report their native
 * priority on gaio's scale: a stream made with cuStreamCreateWithPriority at
 * CUDA priority c (least .. greatest, greatest the most negative) and wrapped
 * with gaio_stream_wrap has priority least - c (greatest -> max_priority,
 * least -> 0); gaio_stream_create(p) -> its native stream -> wrap gives p back;
 * the legacy and per-thread default stream handles have priority 0. */
#include <dlfcn.h>
#include <stdatomic.h>

#include "common.h"
#include "support.h"

#define MAX_LOG 1024

/* Order log: host functions append their code. One worker, but written from a
 * gaio thread and read by the test after a synchronize: atomics all the same. */
static atomic_int g_n;
static int g_log[MAX_LOG];

typedef struct entry {
    int code;
} entry;

static gaio_status log_fn(gaio_status st, void *user) {
    const entry *e = user;
    int pos = atomic_fetch_add(&g_n, 1);
    if (pos < MAX_LOG) g_log[pos] = st == GAIO_OK ? e->code : -1;
    return GAIO_OK;
}

#define LOW(i) (1000 + (i))
#define HIGH(i) (2000 + (i))

static void log_reset(void) {
    atomic_store(&g_n, 0);
    memset(g_log, 0, sizeof g_log);
}

static void check_log(const int *want, int n, const char *what) {
    int got = atomic_load(&g_n);
    int bad = got != n;
    for (int i = 0; !bad && i < n; i++) bad = g_log[i] != want[i];
    if (bad) {
        fprintf(stderr, "%s: order differs\n  got: ", what);
        for (int i = 0; i < got && i < MAX_LOG; i++) fprintf(stderr, "%d ", g_log[i]);
        fprintf(stderr, "\n want: ");
        for (int i = 0; i < n; i++) fprintf(stderr, "%d ", want[i]);
        fprintf(stderr, "\n");
        exit(1);
    }
}

/* ---- 1. urgent work submitted while the normal stream's backlog runs ---- */

#define NLOW 40
#define NHIGH 8
#define GATE_AT 10

static void test_submitted_during_backlog(gaio_context *ctx, int max_prio) {
    gaio_stream *low, *high;
    OK(gaio_stream_create(ctx, 0, 0, &low));
    OK(gaio_stream_create(ctx, max_prio, 0, &high));
    entry lo[NLOW], hi[NHIGH];
    log_reset();
    gate g = {0};
    for (int i = 0; i < NLOW; i++) {
        if (i == GATE_AT) OK(gaio_launch_host_func(low, gate_fn, &g));
        lo[i].code = LOW(i);
        OK(gaio_launch_host_func(low, log_fn, &lo[i]));
    }
    /* The only worker is now inside the gate, with LOW(0..GATE_AT-1) done. */
    wait_entered(&g);
    CHECK(atomic_load(&g_n) == GATE_AT);
    for (int j = 0; j < NHIGH; j++) {
        hi[j].code = HIGH(j);
        OK(gaio_launch_host_func(high, log_fn, &hi[j]));
    }
    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(low));
    OK(gaio_stream_synchronize(high));
    int want[NLOW + NHIGH], n = 0;
    for (int i = 0; i < GATE_AT; i++) want[n++] = LOW(i);
    for (int j = 0; j < NHIGH; j++) want[n++] = HIGH(j);
    for (int i = GATE_AT; i < NLOW; i++) want[n++] = LOW(i);
    check_log(want, n, "urgent work submitted during a backlog");
    CHECK(!atomic_load(&g.timed_out));
    OK(gaio_stream_release(low));
    OK(gaio_stream_release(high));
}

/* ---- 2. urgent work released by an event that the backlog records ---- */

#define EV_AT 25

static void test_released_by_event(gaio_context *ctx, int max_prio) {
    gaio_stream *low, *high, *mid;
    OK(gaio_stream_create(ctx, 0, 0, &low));
    OK(gaio_stream_create(ctx, max_prio, 0, &high));
    OK(gaio_stream_create(ctx, max_prio > 1 ? 1 : 0, 0, &mid));
    gaio_event *ev;
    OK(gaio_event_create(ctx, 0, &ev));
    entry lo[NLOW], hi[NHIGH];
    log_reset();
    gate g = {0};
    /* Hold the worker so that everything below is queued before anything runs. */
    OK(gaio_launch_host_func(low, gate_fn, &g));
    for (int i = 0; i < NLOW; i++) {
        if (i == EV_AT) OK(gaio_event_record(ev, low));
        lo[i].code = LOW(i);
        OK(gaio_launch_host_func(low, log_fn, &lo[i]));
    }
    OK(gaio_stream_wait_event(high, ev));
    for (int j = 0; j < NHIGH; j++) {
        hi[j].code = HIGH(j);
        OK(gaio_launch_host_func(high, log_fn, &hi[j]));
    }
    atomic_store(&g.open, 1);
    OK(gaio_stream_synchronize(low));
    OK(gaio_stream_synchronize(high));
    int want[NLOW + NHIGH], n = 0;
    for (int i = 0; i < EV_AT; i++) want[n++] = LOW(i);
    for (int j = 0; j < NHIGH; j++) want[n++] = HIGH(j);
    for (int i = EV_AT; i < NLOW; i++) want[n++] = LOW(i);
    check_log(want, n, "urgent work released by an event");
    CHECK(!atomic_load(&g.timed_out));

    /* Three levels queued at once behind the gate: most urgent first, then the
     * middle one, then the rest of the normal stream. */
    log_reset();
    g = (gate){0};
    OK(gaio_launch_host_func(low, gate_fn, &g));
    wait_entered(&g); /* the worker is held before anything else is queued */
    for (int i = 0; i < 5; i++) {
        lo[i].code = LOW(i);
        OK(gaio_launch_host_func(low, log_fn, &lo[i]));
    }
    entry md[5];
    for (int i = 0; i < 5; i++) {
        md[i].code = 3000 + i;
        OK(gaio_launch_host_func(mid, log_fn, &md[i]));
    }
    for (int j = 0; j < 5; j++) {
        hi[j].code = HIGH(j);
        OK(gaio_launch_host_func(high, log_fn, &hi[j]));
    }
    atomic_store(&g.open, 1);
    OK(gaio_context_synchronize(ctx));
    if (max_prio >= 2) { /* with two levels only, mid and low would share one */
        n = 0;
        for (int j = 0; j < 5; j++) want[n++] = HIGH(j);
        for (int i = 0; i < 5; i++) want[n++] = 3000 + i;
        for (int i = 0; i < 5; i++) want[n++] = LOW(i);
        check_log(want, n, "three priority levels");
    }
    OK(gaio_event_release(ev));
    OK(gaio_stream_release(low));
    OK(gaio_stream_release(high));
    OK(gaio_stream_release(mid));
}

/* ---- 3. range ---- */

static void test_range(gaio_context *ctx, int max_prio) {
    gaio_stream *s = (gaio_stream *)&g_n;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, -1, 0, &s), "gaio_stream_create");
    CHECK(s == NULL);
    s = (gaio_stream *)&g_n;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, max_prio + 1, 0, &s), "gaio_stream_create");
    CHECK(s == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_create(ctx, 1 << 30, GAIO_STREAM_DEFERRED, &s), "gaio_stream_create");
    CHECK(strstr(gaio_last_error(), "priority") != NULL);
    for (int p = 0; p <= max_prio; p++) {
        OK(gaio_stream_create(ctx, p, (p & 1) ? GAIO_STREAM_DEFERRED : 0, &s));
        int got = -1;
        OK(gaio_stream_priority(s, &got));
        CHECK(got == p);
        OK(gaio_stream_synchronize(s));
        OK(gaio_stream_release(s));
    }
    gaio_stream *def;
    OK(gaio_context_default_stream(ctx, &def));
    int got = -1;
    OK(gaio_stream_priority(def, &got));
    CHECK(got == 0);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_stream_priority(def, NULL), "gaio_stream_priority");
}

/* ---- 4. foreign CUDA streams: their native priority on gaio's scale ---- */

/* The raw driver, as PyTorch or CuPy reach it: every entry point through
 * cuGetProcAddress_v2 (the one symbol the fake driver of the fakecuda tests
 * exports), at the ABI of CUDA 12.0, legacy default stream semantics. cuda.h's
 * types spelled out: handles are pointers, CUdevice and CUresult are ints. */
typedef struct raw_driver {
    int (*device_get)(int *dev, int ordinal);
    int (*primary_retain)(void **ctx, int dev);
    int (*primary_release)(int dev);
    int (*ctx_get_current)(void **ctx);
    int (*ctx_set_current)(void *ctx);
    int (*priority_range)(int *least, int *greatest);
    int (*stream_create)(void **stream, unsigned flags, int priority);
    int (*stream_priority)(void *stream, int *priority);
    int (*stream_destroy)(void *stream);
} raw_driver;

#define RAW_STREAM_NON_BLOCKING 0x1u
#define RAW_STREAM_LEGACY ((void *)0x1)
#define RAW_STREAM_PER_THREAD ((void *)0x2)

static void *raw_entry(void *lib, const char *name) {
    typedef int (*get_proc_fn)(const char *, void **, int, unsigned long long, int *);
    get_proc_fn get_proc;
    void *sym = dlsym(lib, "cuGetProcAddress_v2");
    CHECK(sym != NULL);
    memcpy(&get_proc, &sym, sizeof sym);
    void *fn = NULL;
    int found = 0;
    if (get_proc(name, &fn, 12000, 0 /* CU_GET_PROC_ADDRESS_DEFAULT */, &found) != 0 || !fn) {
        fprintf(stderr, "the CUDA driver has no entry point %s\n", name);
        exit(1);
    }
    return fn;
}

static raw_driver raw_load(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW); /* the same library gaio opened */
    CHECK(lib != NULL);
    raw_driver d;
    void *p;
#define RAW(field, name) (p = raw_entry(lib, name), memcpy(&d.field, &p, sizeof p))
    RAW(device_get, "cuDeviceGet");
    RAW(primary_retain, "cuDevicePrimaryCtxRetain");
    RAW(primary_release, "cuDevicePrimaryCtxRelease");
    RAW(ctx_get_current, "cuCtxGetCurrent");
    RAW(ctx_set_current, "cuCtxSetCurrent");
    RAW(priority_range, "cuCtxGetStreamPriorityRange");
    RAW(stream_create, "cuStreamCreateWithPriority");
    RAW(stream_priority, "cuStreamGetPriority");
    RAW(stream_destroy, "cuStreamDestroy");
#undef RAW
    return d;
}

/* Wraps native, checks the priority gaio reports, and lets it go (native stays). */
static void check_wrapped(gaio_context *ctx, void *native, int want) {
    gaio_stream *w = NULL;
    OK(gaio_stream_wrap(ctx, native, 0, &w));
    void *back = NULL;
    OK(gaio_stream_native(w, &back));
    CHECK(back == native);
    int got = -1;
    OK(gaio_stream_priority(w, &got));
    if (got != want) {
        fprintf(stderr, "wrapped stream %p: gaio priority %d, expected %d\n", native, got, want);
        exit(1);
    }
    OK(gaio_stream_release(w));
}

static void test_wrap_priority(gaio_context *ctx, const gaio_device_props *props) {
    raw_driver cu = raw_load();
    int dev = 0;
    void *primary = NULL, *prev = NULL;
    CHECK(cu.device_get(&dev, props->ordinal) == 0);
    CHECK(cu.primary_retain(&primary, dev) == 0);
    CHECK(cu.ctx_get_current(&prev) == 0);
    CHECK(cu.ctx_set_current(primary) == 0);
    int least = 1, greatest = 1;
    CHECK(cu.priority_range(&least, &greatest) == 0);
    printf("CUDA stream priorities %d (least) .. %d (greatest); gaio 0 .. %d\n", least, greatest,
           props->max_priority);
    CHECK(least - greatest == props->max_priority);

    /* A native stream at every CUDA priority, as a user makes it, then wrapped. */
    for (int c = least; c >= greatest; c--) {
        void *ns = NULL;
        CHECK(cu.stream_create(&ns, RAW_STREAM_NON_BLOCKING, c) == 0);
        int native = 1;
        CHECK(cu.stream_priority(ns, &native) == 0 && native == c);
        check_wrapped(ctx, ns, least - c);
        if (c == greatest) check_wrapped(ctx, ns, props->max_priority);
        if (c == least) check_wrapped(ctx, ns, 0);
        CHECK(cu.stream_destroy(ns) == 0);
    }
    /* Beyond the range the driver clamps: still the ends of gaio's range. */
    const int beyond[2] = {greatest - 3, least + 2}, mapped[2] = {props->max_priority, 0};
    for (int i = 0; i < 2; i++) {
        void *ns = NULL;
        CHECK(cu.stream_create(&ns, 0, beyond[i]) == 0);
        check_wrapped(ctx, ns, mapped[i]);
        CHECK(cu.stream_destroy(ns) == 0);
    }

    /* gaio_stream_create(p) -> native priority least - p -> wrap -> p. */
    for (int p = 0; p <= props->max_priority; p++) {
        gaio_stream *s = NULL;
        OK(gaio_stream_create(ctx, p, (p & 1) ? GAIO_STREAM_DEFERRED : 0, &s));
        void *ns = NULL;
        OK(gaio_stream_native(s, &ns));
        int native = 1;
        CHECK(cu.stream_priority(ns, &native) == 0);
        if (native != least - p) {
            fprintf(stderr, "gaio priority %d: native priority %d, expected %d\n", p, native, least - p);
            exit(1);
        }
        check_wrapped(ctx, ns, p);
        OK(gaio_stream_synchronize(s));
        OK(gaio_stream_release(s));
    }

    /* The default stream handles: normal priority. (NULL, the legacy default
     * stream's other name, is refused by gaio_stream_wrap.) */
    check_wrapped(ctx, RAW_STREAM_LEGACY, 0);
    check_wrapped(ctx, RAW_STREAM_PER_THREAD, 0);

    CHECK(cu.ctx_set_current(prev) == 0);
    CHECK(cu.primary_release(dev) == 0);
}

static void run(int device) {
    gaio_device_props props_;
    OK(gaio_device_get_props(device, &props_));
    if (props_.kind != GAIO_DEVICE_HOST) {
        /* The order checks need the CPU backend's worker pool (gaio_configure
         * cpu_workers = 1); on CUDA: the range and wrapped streams' priorities. */
        gaio_context *ctx;
        OK(gaio_context_create(device, NULL, &ctx));
        gaio_device_props props;
        OK(gaio_device_get_props(device, &props)); /* the range of a live context */
        CHECK(props.max_priority >= 1);
        test_range(ctx, props.max_priority);
        test_wrap_priority(ctx, &props);
        OK(gaio_context_release(ctx));
        return;
    }
    (void)test_seed(); /* no random data; printed for the record */
    gaio_config cfg = {.cpu_workers = 1};
    gaio_status cst = gaio_configure(&cfg);
    if (cst == GAIO_ERR_STATE) {
        /* A second device in this process: gaio runs already with its pool. */
        printf("gaio already configured; priority checks need the one-worker pool of the first device\n");
        return;
    }
    OK(cst);
    gaio_device_props props;
    OK(gaio_device_get_props(device, &props));
    CHECK(props.max_priority >= 1);
    gaio_context *ctx;
    OK(gaio_context_create(device, NULL, &ctx));
    /* Configuration is fixed once gaio runs. */
    FAILS(GAIO_ERR_STATE, gaio_configure(&cfg), "gaio_configure");
    if (props.kind == GAIO_DEVICE_HOST) CHECK(props.processor_count == 1);
    test_submitted_during_backlog(ctx, props.max_priority);
    test_released_by_event(ctx, props.max_priority);
    test_range(ctx, props.max_priority);
    OK(gaio_context_release(ctx));
}
