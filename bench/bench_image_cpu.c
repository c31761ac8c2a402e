/* The image ops on the CPU backend against OpenCV, and the Python-peer runner both
 * image benchmarks use (bench_image_cpu.h).
 *
 * Frames are u8 RGB 1920x1080 (random bytes). Each op runs as one gaio_resize over
 * a batch of N = 2 x cores frames and over a single frame, on a gaio restarted with
 * 1 worker and then with one worker per online core; a sample is the call plus
 * gaio_stream_synchronize on the host clock, divided by the frames it resized.
 * OpenCV (bench/image_opencv.py, under /usr/bin/python3 first) times cv2.resize on
 * one frame with cv2.setNumThreads(1) and with its default threads. Figures are
 * medians of SAMPLES samples after WARM unrecorded ones. */
#include "bench_image_cpu.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "gaio/gaio.h"
#include "gaio/image.h"

#define PROG "gaio bench image cpu"
#define CK(call) BENCH_CK(PROG, call)

#define SRC_W 1920
#define SRC_H 1080
#define CH 3
#define SAMPLES 20
#define WARM 3
#define MAX_BATCH 256
#define PEER_TIMEOUT_S 300
#define GOAL_SCALING 0.7

/* ================= Python peers ================= */

static bool readable(const char *path) { return access(path, R_OK) == 0; }

static bool try_path(char *out, size_t size, const char *dir, const char *sep, const char *name) {
    int n = snprintf(out, size, "%s%s%s", dir, sep, name);
    return n > 0 && (size_t)n < size && readable(out);
}

/* Where bench/<name> is: $GAIO_BENCH_SCRIPTS, the source tree of this build, ./bench,
 * then beside the executable (a build tree's bench/ two levels under the source). */
static bool find_script(const char *name, char *out, size_t size) {
    const char *env = getenv("GAIO_BENCH_SCRIPTS");
    if (env && env[0] && try_path(out, size, env, "/", name)) return true;
#ifdef GAIO_BENCH_SCRIPT_DIR
    if (try_path(out, size, GAIO_BENCH_SCRIPT_DIR, "/", name)) return true;
#endif
    if (try_path(out, size, "bench", "/", name)) return true;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            static const char *const rel[] = {"/../../bench/", "/../bench/", "/"};
            for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
                if (try_path(out, size, exe, rel[i], name)) return true;
        }
    }
    return false;
}

/* 'text' for sh, with ' written as '\''. */
static bool sh_quote(char *out, size_t size, const char *text) {
    size_t k = 0;
    if (k + 1 >= size) return false;
    out[k++] = '\'';
    for (const char *p = text; *p; p++) {
        const char *piece = *p == '\'' ? "'\\''" : NULL;
        size_t len = piece ? 4 : 1;
        if (k + len + 2 >= size) return false;
        if (piece) memcpy(out + k, piece, len);
        else out[k] = *p;
        k += len;
    }
    out[k++] = '\'';
    out[k] = '\0';
    return true;
}

/* Notes are cut to fit: the result of snprintf is checked so that cutting is allowed. */
static void add_note(image_peer *p, const char *fmt, const char *a, const char *b) {
    if (p->nnotes >= IMAGE_PEER_NOTES) return;
    char *note = p->notes[p->nnotes++];
    if (snprintf(note, sizeof p->notes[0], fmt, a, b) < 0) snprintf(note, sizeof p->notes[0], "note: (unprintable)");
}

static void chomp(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ')) s[--n] = '\0';
}

/* One run under one interpreter: rows and notes into p. */
static void run_one(const char *python, const char *script_q, const char *args, int timeout_s, image_peer *p) {
    char py_q[512], cmd[2048];
    /* A bare name (python3) is looked up on PATH; anything else is quoted as a path. */
    if (strchr(python, '/') || strchr(python, ' ')) {
        if (!sh_quote(py_q, sizeof py_q, python)) return;
    } else {
        snprintf(py_q, sizeof py_q, "%s", python);
    }
    int n = snprintf(cmd, sizeof cmd,
                     "if command -v timeout >/dev/null 2>&1; then exec timeout -k 5 %d %s %s %s; "
                     "else exec %s %s %s; fi 2>&1",
                     timeout_s, py_q, script_q, args, py_q, script_q, args);
    if (n < 0 || (size_t)n >= sizeof cmd) {
        add_note(p, "note: the command for %s is too long%s", python, "");
        return;
    }
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    if (!f) {
        add_note(p, "note: popen(%s) failed: %s", python, strerror(errno));
        return;
    }
    char line[512], last_other[240] = "";
    char pending[IMAGE_PEER_NOTES][200];
    int rows_before = p->nrows, npending = 0;
    while (fgets(line, sizeof line, f)) {
        chomp(line);
        if (!strncmp(line, "note:", 5)) {
            if (npending < IMAGE_PEER_NOTES) snprintf(pending[npending++], sizeof pending[0], "%.190s", line + 5);
            continue;
        }
        image_peer_row r;
        int used = 0;
        memset(&r, 0, sizeof r);
        if (sscanf(line, "%47s %lf %n", r.name, &r.ms, &used) >= 2 && r.ms > 0) {
            if (used > 0) snprintf(r.variant, sizeof r.variant, "%.95s", line + used);
            if (p->nrows < IMAGE_PEER_ROWS) p->rows[p->nrows++] = r;
        } else if (line[0]) {
            snprintf(last_other, sizeof last_other, "%.239s", line);
        }
    }
    int st = pclose(f);
    /* the notes of an interpreter that gave no figures say which it was */
    for (int i = 0; i < npending; i++) {
        if (p->nrows > rows_before) add_note(p, "note:%s%s", pending[i], "");
        else add_note(p, "note: %s:%s", python, pending[i]);
    }
    if (p->nrows == rows_before) {
        if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 124)
            add_note(p, "note: %s: stopped after the time limit%s", python, "");
        else if (last_other[0])
            add_note(p, "note: %s: %s", python, last_other);
        else
            add_note(p, "note: %s gave no figures%s", python, "");
    }
}

void image_peer_run(const char *const *pythons, size_t npythons, const char *script, const char *args, int timeout_s,
                    image_peer *p) {
    memset(p, 0, sizeof *p);
    char path[PATH_MAX], script_q[PATH_MAX * 4 + 8];
    if (!find_script(script, path, sizeof path)) {
        add_note(p, "note: bench/%s not found (set GAIO_BENCH_SCRIPTS to the folder that holds it)%s", script, "");
        return;
    }
    if (!sh_quote(script_q, sizeof script_q, path)) {
        add_note(p, "note: the path of %s is too long%s", script, "");
        return;
    }
    const char *env = getenv("GAIO_BENCH_PYTHON");
    if (env && env[0]) {
        run_one(env, script_q, args, timeout_s, p);
        if (p->nrows) snprintf(p->python, sizeof p->python, "%s", env);
    }
    for (size_t i = 0; i < npythons && !p->nrows; i++) {
        run_one(pythons[i], script_q, args, timeout_s, p);
        if (p->nrows) snprintf(p->python, sizeof p->python, "%s", pythons[i]);
    }
}

double image_peer_ms(const image_peer *p, const char *name, const char **variant) {
    for (int i = 0; i < p->nrows; i++)
        if (!strcmp(p->rows[i].name, name)) {
            if (variant) *variant = p->rows[i].variant;
            return p->rows[i].ms;
        }
    if (variant) *variant = "";
    return -1;
}

/* ================= the CPU benchmark ================= */

typedef struct cpu_op {
    const char *label;
    const char *key; /* the OpenCV script's names: key_t1, key_tN */
    gaio_interp interp;
    int dw, dh;
} cpu_op;

static const cpu_op ops[] = {
    {"linear 1920x1080 -> 1280x720", "linear_720", GAIO_INTERP_LINEAR, 1280, 720},
    {"area 1920x1080 -> 224x224", "area_224", GAIO_INTERP_AREA, 224, 224},
};
#define NOPS (sizeof ops / sizeof ops[0])

typedef struct phase_result {
    double batch_ms[NOPS];  /* per frame, over a batch of N */
    double single_ms[NOPS]; /* one frame per call */
} phase_result;

static int restart(const gaio_config *config) {
    gaio_status st = GAIO_OK;
    for (int i = 0; i < 5; i++) { /* each try waits up to 1 s for work in flight to let go */
        st = gaio_shutdown();
        if (st != GAIO_ERR_STATE) break;
    }
    if (st != GAIO_OK) {
        fprintf(stderr, PROG ": gaio_shutdown failed (%s: %s): is a gaio context still alive in this process?\n",
                gaio_status_string(st), gaio_last_error());
        return -1;
    }
    CK(gaio_configure(config));
    return 0;
}

/* Median ms per frame of `frames` frames resized per call. */
static int time_resize(gaio_stream *s, const gaio_image *src, const gaio_image *dst, gaio_interp interp, int frames,
                       double *ms) {
    double v[SAMPLES];
    for (int i = -WARM; i < SAMPLES; i++) {
        uint64_t t0 = bench_now_ns();
        CK(gaio_resize(s, src, dst, interp));
        CK(gaio_stream_synchronize(s));
        uint64_t t1 = bench_now_ns();
        if (i >= 0) v[i] = (double)(t1 - t0) / 1e6 / frames;
    }
    *ms = bench_median(v, SAMPLES);
    return 0;
}

typedef struct phase_state {
    gaio_context *ctx;
    gaio_stream *s;
    gaio_buffer *src, *dst;
} phase_state;

static int phase_body(phase_state *ps, int n, phase_result *r) {
    const size_t frame = (size_t)SRC_W * SRC_H * CH;
    size_t dst_frame = 0;
    for (size_t i = 0; i < NOPS; i++) {
        size_t b = (size_t)ops[i].dw * (size_t)ops[i].dh * CH;
        if (b > dst_frame) dst_frame = b;
    }
    CK(gaio_context_create(0, NULL, &ps->ctx));
    CK(gaio_stream_create(ps->ctx, 0, 0, &ps->s));
    CK(gaio_buffer_alloc(ps->ctx, GAIO_MEM_DEVICE, frame * (size_t)n, &ps->src));
    CK(gaio_buffer_alloc(ps->ctx, GAIO_MEM_DEVICE, dst_frame * (size_t)n, &ps->dst));
    /* random bytes, never all zeros (a frame is a multiple of 4 bytes) */
    CK(gaio_rng_set_state(ps->ctx, 0x1a9e5eedull, 0));
    CK(gaio_rng_bits_u32(ps->s, ps->src, 0, frame * (size_t)n / 4));
    CK(gaio_stream_synchronize(ps->s));
    for (size_t i = 0; i < NOPS; i++) {
        const cpu_op *op = &ops[i];
        gaio_image src = gaio_image_make(ps->src, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, n, SRC_W, SRC_H, CH);
        gaio_image dst = gaio_image_make(ps->dst, 0, GAIO_DTYPE_U8, GAIO_LAYOUT_HWC, n, op->dw, op->dh, CH);
        if (time_resize(ps->s, &src, &dst, op->interp, n, &r->batch_ms[i]) != 0) return -1;
        src.batch = dst.batch = 1;
        if (time_resize(ps->s, &src, &dst, op->interp, 1, &r->single_ms[i]) != 0) return -1;
    }
    return 0;
}

static int phase(int workers, int n, phase_result *r) {
    gaio_config config = {.cpu_workers = workers, .wait_policy = GAIO_WAIT_HYBRID};
    if (restart(&config) != 0) return -1;
    phase_state ps = {0};
    int rc = phase_body(&ps, n, r);
    if (ps.s) {
        gaio_status st = gaio_stream_synchronize(ps.s);
        if (rc == 0 && bench_ck(PROG, st, "gaio_stream_synchronize (end of phase)") != 0) rc = -1;
    }
    gaio_buffer_release(ps.src);
    gaio_buffer_release(ps.dst);
    gaio_stream_release(ps.s);
    gaio_context_release(ps.ctx);
    return rc;
}

static void fmt_ms(char *buf, size_t size, double ms) {
    if (ms <= 0) snprintf(buf, size, "-");
    else if (ms < 10) snprintf(buf, size, "%.3f", ms);
    else snprintf(buf, size, "%.2f", ms);
}

static void fmt_ratio(char *buf, size_t size, double a, double b) {
    if (a > 0 && b > 0) snprintf(buf, size, "%.2f", a / b);
    else snprintf(buf, size, "-");
}

int gaio_bench_image_cpu_run(FILE *out) {
    uint64_t start = bench_now_ns();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    int n = (int)(2 * cores < MAX_BATCH ? 2 * cores : MAX_BATCH);
    phase_result one, all;
    memset(&one, 0, sizeof one);
    memset(&all, 0, sizeof all);
    int rc = 1;
    if (phase(1, n, &one) != 0) goto done;
    if (phase((int)cores, n, &all) != 0) goto done;
    if (restart(NULL) != 0) goto done;

    static image_peer cv; /* large: keep it off the stack */
    static const char *const pythons[] = {"/usr/bin/python3", "python3"};
    char args[128];
    snprintf(args, sizeof args, "--width %d --height %d --samples %d --warmup %d", SRC_W, SRC_H, SAMPLES, WARM);
    image_peer_run(pythons, 2, "image_opencv.py", args, PEER_TIMEOUT_S, &cv);

    fprintf(out, "gaio %d.%d.%d image ops, CPU backend: %ld online cores; u8 RGB %dx%d frames (random), batch N = %d\n",
            GAIO_VERSION_MAJOR, GAIO_VERSION_MINOR, GAIO_VERSION_PATCH, cores, SRC_W, SRC_H, n);
    fprintf(out, "ms per frame, median of %d samples after %d warm-up; 1T: 1 worker / cv2.setNumThreads(1); "
                 "%ldT: %ld workers / OpenCV's default threads\n\n",
            SAMPLES, WARM, cores, cores);
    static const int widths[] = {8, 9, 6, 10, 10, 9, 6, 7};
    const bench_table t = {out, 28, widths, 8, 30};
    char h_gn[32], h_g1[32], h_cv[32];
    snprintf(h_gn, sizeof h_gn, "gaio %ldT N", cores);
    snprintf(h_g1, sizeof h_g1, "gaio %ldT 1", cores);
    snprintf(h_cv, sizeof h_cv, "cv %ldT", cores);
    bench_table_row(&t, "op", (const char *const[]){"gaio 1T", "cv 1T", "g/cv", h_gn, h_g1, h_cv, "g1/cv", "scaling"},
                    "goals");
    bench_table_sep(&t);
    bool goals_met = true;
    for (size_t i = 0; i < NOPS; i++) {
        char key1[64], keyn[64];
        snprintf(key1, sizeof key1, "%s_t1", ops[i].key);
        snprintf(keyn, sizeof keyn, "%s_tN", ops[i].key);
        double cv1 = image_peer_ms(&cv, key1, NULL), cvn = image_peer_ms(&cv, keyn, NULL);
        double g1 = one.batch_ms[i], gn = all.batch_ms[i], gn1 = all.single_ms[i];
        double scaling = g1 / gn / (double)cores;
        char c[8][32], last[64];
        fmt_ms(c[0], sizeof c[0], g1);
        fmt_ms(c[1], sizeof c[1], cv1);
        fmt_ratio(c[2], sizeof c[2], g1, cv1);
        fmt_ms(c[3], sizeof c[3], gn);
        fmt_ms(c[4], sizeof c[4], gn1);
        fmt_ms(c[5], sizeof c[5], cvn);
        fmt_ratio(c[6], sizeof c[6], gn1, cvn);
        snprintf(c[7], sizeof c[7], "%.2f", scaling);
        bool speed_ok = cv1 > 0 && g1 <= cv1, scale_ok = scaling >= GOAL_SCALING;
        goals_met = goals_met && speed_ok && scale_ok;
        snprintf(last, sizeof last, "1T<=cv: %s, scaling>=%.1f: %s", cv1 > 0 ? (speed_ok ? "ok" : "MISSED") : "-",
                 GOAL_SCALING, scale_ok ? "ok" : "MISSED");
        bench_table_row(&t, ops[i].label, (const char *const[]){c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]}, last);
    }
    fprintf(out,
            "\ngaio 1T, gaio %ldT N: one gaio_resize over a batch of N frames, per frame; gaio %ldT 1: one frame per call.\n"
            "cv: cv2.resize of one frame (INTER_LINEAR, INTER_AREA). g/cv = gaio 1T / cv 1T; g1/cv = gaio %ldT 1 / cv %ldT.\n"
            "scaling = (gaio 1T / gaio %ldT N) / %ld cores: the share of ideal speed-up a batch gets from the pool.\n"
            "goals: gaio on 1 thread no slower than OpenCV on 1 thread; scaling efficiency >= %.1f.%s\n",
            cores, cores, cores, cores, cores, cores, GOAL_SCALING, goals_met ? "" : " (some MISSED)");
    if (cv.python[0]) fprintf(out, "OpenCV peer: %s bench/image_opencv.py\n", cv.python);
    else fprintf(out, "OpenCV peer: no figures (OpenCV columns read \"-\")\n");
    for (int i = 0; i < cv.nnotes; i++) fprintf(out, "  %s\n", cv.notes[i]);
    fprintf(out, "total run time %.1f s\n", (double)(bench_now_ns() - start) / 1e9);
    rc = 0;
done:
    if (rc != 0 && gaio_shutdown() == GAIO_OK) gaio_configure(NULL);
    fflush(out);
    return rc;
}
