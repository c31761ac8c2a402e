/* gaio_model_load and the model inspection calls, against the models that
 * tests/model/make_models.py writes with the onnx package into the directory named by
 * GAIO_MODEL_DIR (ctest sets it; the model_data fixture writes it). Its manifest.txt
 * says what each model must give, so nothing Python decided is repeated here:
 *   good models: the summary, every graph input and output (names, dtypes, shapes,
 *     the symbolic batch), the nodes left after folding; gaio_model_load_memory of the
 *     same bytes gives the same (or, with external data, INVALID_ARG);
 *   bad models: the status and the message's fragments, from a file and from memory;
 *   good models with random bytes changed (seeded): a status, never a crash.
 * Then bad arguments and reference counting. The loader is host code: on --gpu it
 * runs the same checks once per CUDA device (they are quick). */
#include "common.h"
#include "model_files.h"

#include <errno.h>

#define MAX_TOKENS 64
#define MAX_NODES 256

static void path_of(char *buf, size_t n, const char *rel) {
    int w = snprintf(buf, n, "%s/%s", model_dir(), rel);
    CHECK(w > 0 && (size_t)w < n);
}

/* ---- the manifest ---- */

typedef struct line {
    int n;
    char *tok[MAX_TOKENS];
} line;

/* Splits s (modified) at spaces. */
static line split(char *s) {
    line l = {0};
    for (char *t = strtok(s, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
        CHECK(l.n < MAX_TOKENS);
        l.tok[l.n++] = t;
    }
    return l;
}

/* s matches one of the '|'-separated alternatives of alts: as a status name
 * ("OK", "INVALID_ARG", ...) when status, else as a substring of s. */
static int matches_any(const char *alts, const char *s, int status) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", alts);
    char *save = NULL;
    for (char *a = strtok_r(buf, "|", &save); a; a = strtok_r(NULL, "|", &save)) {
        if (status) {
            char full[128];
            snprintf(full, sizeof full, strcmp(a, "OK") ? "GAIO_ERR_%s" : "GAIO_%s", a);
            if (!strcmp(full, s)) return 1;
        } else if (strstr(s, a)) {
            return 1;
        }
    }
    return 0;
}

/* ---- expectations of one call ---- */

/* st must be one of want's statuses; a failure must name fn and hold each fragment. */
static void expect_status(const char *what, const char *fn, gaio_status st, const char *want, char **frags,
                          int nfrags) {
    const char *err = st == GAIO_OK ? "" : gaio_last_error();
    if (!matches_any(want, gaio_status_string(st), 1)) {
        fprintf(stderr, "%s: %s returned %s, expected %s (%s)\n", what, fn, gaio_status_string(st), want, err);
        exit(1);
    }
    if (st == GAIO_OK) return;
    if (!strstr(err, fn)) {
        fprintf(stderr, "%s: %s: message does not name the function: '%s'\n", what, fn, err);
        exit(1);
    }
    for (int i = 0; i < nfrags; i++) {
        if (!matches_any(frags[i], err, 0)) {
            fprintf(stderr, "%s: %s: message lacks '%s': '%s'\n", what, fn, frags[i], err);
            exit(1);
        }
    }
}

/* key=value or key>=value in l from token `from` on; returns the value and sets
 * *at_least, or exits when absent. */
static const char *field(const line *l, int from, const char *key, int *at_least) {
    size_t k = strlen(key);
    for (int i = from; i < l->n; i++) {
        const char *t = l->tok[i];
        if (!strncmp(t, key, k) && t[k] == '=') {
            if (at_least) *at_least = 0;
            return t + k + 1;
        }
        if (!strncmp(t, key, k) && t[k] == '>' && t[k + 1] == '=' && at_least) {
            *at_least = 1;
            return t + k + 2;
        }
    }
    fprintf(stderr, "manifest: record for %s lacks %s\n", l->tok[1], key);
    exit(1);
}

static void expect_int(const char *what, const char *name, int64_t got, const line *l, const char *key) {
    int at_least = 0;
    int64_t want = strtoll(field(l, 2, key, &at_least), NULL, 10);
    if (at_least ? got < want : got != want) {
        fprintf(stderr, "%s: %s is %" PRId64 ", expected %s%" PRId64 "\n", what, name, got, at_least ? ">= " : "",
                want);
        exit(1);
    }
}

/* ---- a good model ---- */

/* Good bytes with a few changed at random (seeded): whatever the loader makes of
 * them, it answers with a status and never crashes nor reads out of bounds
 * (AddressSanitizer's build checks the latter). */
static void test_mutations(const char *rel, const unsigned char *bytes, size_t size, uint64_t *seed) {
    unsigned char *copy = malloc(size);
    CHECK(copy);
    int ok = 0, refused = 0;
    for (int round = 0; round < 60; round++) {
        memcpy(copy, bytes, size);
        int flips = 1 + (int)(test_rand(seed) % 4);
        for (int f = 0; f < flips; f++) copy[test_rand(seed) % size] = (unsigned char)test_rand(seed);
        gaio_model *m = NULL;
        gaio_status st = gaio_model_load_memory(copy, size, &m);
        if (st == GAIO_OK) {
            gaio_model_summary s;
            OK(gaio_model_summarize(m, &s));
            for (int32_t i = 0; i < s.nodes; i++) {
                const char *name = NULL, *op = NULL;
                OK(gaio_model_node(m, i, &name, &op));
                CHECK(name && op);
            }
            for (int32_t i = 0; i < s.inputs + s.outputs; i++) {
                gaio_model_io io;
                OK(i < s.inputs ? gaio_model_input(m, i, &io) : gaio_model_output(m, i - s.inputs, &io));
                CHECK(io.name && io.ndim >= 0 && io.ndim <= GAIO_MODEL_MAX_NDIM);
                /* a flip may turn an input's type into another one gaio keeps (int32, bool) */
                CHECK(io.dtype == GAIO_DTYPE_F32 || io.dtype == GAIO_DTYPE_F16 || io.dtype == GAIO_DTYPE_S64 ||
                      io.dtype == GAIO_DTYPE_S32 || io.dtype == GAIO_DTYPE_U8);
            }
            OK(gaio_model_release(m));
            ok++;
        } else {
            if (st != GAIO_ERR_INVALID_ARG && st != GAIO_ERR_NOT_SUPPORTED) {
                fprintf(stderr, "%s mutated (round %d): gaio_model_load_memory returned %s (%s)\n", rel, round,
                        gaio_status_string(st), gaio_last_error());
                exit(1);
            }
            CHECK(m == NULL && strstr(gaio_last_error(), "gaio_model_load_memory"));
            refused++;
        }
    }
    printf("    mutated: %d loaded, %d refused\n", ok, refused);
    free(copy);
}


typedef struct good_rec {
    line head;
    line io[16];
    int nio;
    line node[MAX_NODES];
    int nnode;
} good_rec;

static void check_io(const char *what, const gaio_model *m, const line *want, int32_t index) {
    int out = !strcmp(want->tok[0], "output");
    gaio_model_io io;
    memset(&io, 0xAB, sizeof io);
    OK(out ? gaio_model_output(m, index, &io) : gaio_model_input(m, index, &io));
    CHECK(io.name && want->n >= 4);
    if (strcmp(io.name, want->tok[1])) {
        fprintf(stderr, "%s: %s %d is '%s', expected '%s'\n", what, want->tok[0], index, io.name, want->tok[1]);
        exit(1);
    }
    gaio_dtype dt = !strcmp(want->tok[2], "f16") ? GAIO_DTYPE_F16 : !strcmp(want->tok[2], "s64") ? GAIO_DTYPE_S64 : GAIO_DTYPE_F32;
    CHECK(!strcmp(want->tok[2], "f16") || !strcmp(want->tok[2], "f32") || !strcmp(want->tok[2], "s64"));
    if (io.dtype != dt) {
        fprintf(stderr, "%s: %s '%s' has dtype %d, expected %s\n", what, want->tok[0], io.name, (int)io.dtype,
                want->tok[2]);
        exit(1);
    }
    int ndim = atoi(want->tok[3]);
    CHECK(want->n == 4 + ndim);
    if (io.ndim != ndim) {
        fprintf(stderr, "%s: %s '%s' has %d dimensions, expected %d\n", what, want->tok[0], io.name, io.ndim, ndim);
        exit(1);
    }
    for (int d = 0; d < ndim; d++) {
        const char *w = want->tok[4 + d];
        char *end = NULL;
        long long fixed = strtoll(w, &end, 10);
        int symbolic = *end != '\0';
        int64_t want_dim = symbolic ? -1 : (int64_t)fixed;
        const char *want_name = symbolic ? w : "";
        if (io.shape[d] != want_dim || !io.dim_names[d] || strcmp(io.dim_names[d], want_name)) {
            fprintf(stderr, "%s: %s '%s' dimension %d is %" PRId64 " named '%s', expected %" PRId64 " named '%s'\n",
                    what, want->tok[0], io.name, d, io.shape[d], io.dim_names[d] ? io.dim_names[d] : "(null)",
                    want_dim, want_name);
            exit(1);
        }
    }
}

static void check_good_model(const char *what, const gaio_model *m, const good_rec *r) {
    gaio_model_summary s;
    memset(&s, 0xAB, sizeof s);
    OK(gaio_model_summarize(m, &s));
    const line *h = &r->head;
    expect_int(what, "opset", s.opset, h, "opset");
    expect_int(what, "ir_version", s.ir_version, h, "ir");
    expect_int(what, "nodes", s.nodes, h, "nodes");
    expect_int(what, "inputs", s.inputs, h, "inputs");
    expect_int(what, "outputs", s.outputs, h, "outputs");
    expect_int(what, "initializers", s.initializers, h, "initializers");
    expect_int(what, "weight_bytes", (int64_t)s.weight_bytes, h, "weight_bytes");
    const char *producer = field(h, 2, "producer", NULL);
    if (!s.producer || !strstr(s.producer, producer)) {
        fprintf(stderr, "%s: producer '%s' lacks '%s'\n", what, s.producer ? s.producer : "(null)", producer);
        exit(1);
    }

    int32_t in = 0, out = 0;
    for (int i = 0; i < r->nio; i++) {
        if (!strcmp(r->io[i].tok[0], "input")) check_io(what, m, &r->io[i], in++);
        else check_io(what, m, &r->io[i], out++);
    }
    CHECK(in == s.inputs && out == s.outputs);
    gaio_model_io io;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_input(m, s.inputs, &io), "gaio_model_input");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_input(m, -1, &io), "gaio_model_input");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_output(m, s.outputs, &io), "gaio_model_output");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_output(m, -1, &io), "gaio_model_output");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_input(m, 0, NULL), "gaio_model_input");

    /* The nodes as a multiset: any topological order will do. */
    CHECK(s.nodes == r->nnode);
    int used[MAX_NODES] = {0};
    for (int32_t i = 0; i < s.nodes; i++) {
        const char *name = NULL, *op = NULL;
        OK(gaio_model_node(m, i, &name, &op));
        CHECK(name && op);
        int found = 0;
        for (int j = 0; j < r->nnode && !found; j++) {
            const line *w = &r->node[j];
            const char *wname = strcmp(w->tok[2], "-") ? w->tok[2] : "";
            if (!used[j] && !strcmp(w->tok[1], op) && !strcmp(wname, name)) used[j] = found = 1;
        }
        if (!found) {
            fprintf(stderr, "%s: node %d (%s '%s') is not among the expected ones (or is there twice)\n", what, i,
                    op, name);
            exit(1);
        }
    }
    const char *name = NULL, *op = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_node(m, s.nodes, &name, &op), "gaio_model_node");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_node(m, -1, &name, &op), "gaio_model_node");
}

static void test_good(const good_rec *r, uint64_t *seed) {
    const char *rel = r->head.tok[1];
    char path[2048];
    path_of(path, sizeof path, rel);
    printf("good %s\n", rel);

    gaio_model *m = NULL;
    gaio_status st = gaio_model_load(path, &m);
    expect_status(rel, "gaio_model_load", st, "OK", NULL, 0);
    CHECK(m);
    check_good_model(rel, m, r);

    /* Another reference keeps it alive through the first release. */
    OK(gaio_model_retain(m));
    OK(gaio_model_release(m));
    check_good_model(rel, m, r);
    OK(gaio_model_release(m));

    size_t size = 0;
    unsigned char *bytes = read_all(path, &size);
    gaio_model *mm = NULL;
    const char *want = field(&r->head, 2, "memory", NULL);
    if (!strcmp(want, "OK")) test_mutations(rel, bytes, size, seed);
    st = gaio_model_load_memory(bytes, size, &mm);
    char what[2100];
    snprintf(what, sizeof what, "%s (from memory)", rel);
    expect_status(what, "gaio_model_load_memory", st, want, NULL, 0);
    if (st == GAIO_OK) {
        /* The model keeps nothing of the caller's bytes. */
        memset(bytes, 0xFF, size);
        free(bytes);
        bytes = NULL;
        check_good_model(what, mm, r);
        OK(gaio_model_release(mm));
    } else {
        CHECK(mm == NULL);
    }
    free(bytes);
}

/* ---- a bad model ---- */

static void test_bad(const line *l) {
    const char *rel = l->tok[1];
    char path[2048];
    path_of(path, sizeof path, rel);
    CHECK(l->n >= 3);
    char *frags[MAX_TOKENS];
    int nfrags = 0;
    const char *mem_want = NULL;
    for (int i = 3; i < l->n; i++) {
        if (!strncmp(l->tok[i], "memory=", 7)) mem_want = l->tok[i] + 7;
        else frags[nfrags++] = l->tok[i];
    }
    printf("bad %s: %s\n", rel, l->tok[2]);

    gaio_model *m = NULL;
    gaio_status st = gaio_model_load(path, &m);
    expect_status(rel, "gaio_model_load", st, l->tok[2], frags, nfrags);
    CHECK(m == NULL);
    printf("    %s\n", gaio_last_error());

    size_t size = 0;
    unsigned char *bytes = read_all(path, &size);
    char what[2100];
    snprintf(what, sizeof what, "%s (from memory)", rel);
    st = gaio_model_load_memory(bytes, size, &m);
    if (mem_want) expect_status(what, "gaio_model_load_memory", st, mem_want, NULL, 0);
    else expect_status(what, "gaio_model_load_memory", st, l->tok[2], frags, nfrags);
    CHECK(m == NULL);
    free(bytes);
}

/* ---- the manifest, record by record ---- */

static void run_manifest(int *ngood, int *nbad, uint64_t *seed) {
    char path[2048];
    path_of(path, sizeof path, "manifest.txt");
    size_t size = 0;
    char *text = (char *)read_all(path, &size);
    text[size] = '\0';
    static good_rec rec; /* large: off the stack */
    int in_good = 0;
    char *save = NULL;
    for (char *s = strtok_r(text, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
        line l = split(s);
        if (l.n == 0) continue;
        const char *kind = l.tok[0];
        if (!strcmp(kind, "good")) {
            CHECK(!in_good && l.n >= 2);
            memset(&rec, 0, sizeof rec);
            rec.head = l;
            in_good = 1;
        } else if (!strcmp(kind, "input") || !strcmp(kind, "output")) {
            CHECK(in_good && rec.nio < 16);
            rec.io[rec.nio++] = l;
        } else if (!strcmp(kind, "node")) {
            CHECK(in_good && rec.nnode < MAX_NODES && l.n == 3);
            rec.node[rec.nnode++] = l;
        } else if (!strcmp(kind, "end")) {
            CHECK(in_good);
            test_good(&rec, seed);
            in_good = 0;
            (*ngood)++;
        } else if (!strcmp(kind, "bad")) {
            CHECK(!in_good);
            test_bad(&l);
            (*nbad)++;
        } else {
            fprintf(stderr, "manifest: unknown record '%s'\n", kind);
            exit(1);
        }
    }
    CHECK(!in_good);
    free(text);
}

/* ---- arguments ---- */

static void test_arguments(void) {
    char path[2048];
    path_of(path, sizeof path, "cnn_opset13.onnx");
    gaio_model *m = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_load(NULL, &m), "gaio_model_load");
    CHECK(m == NULL);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_load(path, NULL), "gaio_model_load");
    gaio_status st = gaio_model_load("", &m);
    expect_status("an empty path", "gaio_model_load", st, "INVALID_ARG|SYSTEM", NULL, 0);
    CHECK(m == NULL);

    char missing[2048];
    path_of(missing, sizeof missing, "no_such_model.onnx");
    st = gaio_model_load(missing, &m);
    expect_status("a missing file", "gaio_model_load", st, "SYSTEM|INVALID_ARG|NOT_FOUND", NULL, 0);
    CHECK(m == NULL);
    st = gaio_model_load(model_dir(), &m); /* a directory */
    expect_status("a directory", "gaio_model_load", st, "SYSTEM|INVALID_ARG", NULL, 0);
    CHECK(m == NULL);

    size_t size = 0;
    unsigned char *bytes = read_all(path, &size);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_load_memory(NULL, size, &m), "gaio_model_load_memory");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_load_memory(bytes, 0, &m), "gaio_model_load_memory");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_load_memory(bytes, size, NULL), "gaio_model_load_memory");
    CHECK(m == NULL);
    /* Prefixes are refused, never read past: each is corrupt, or a model without
     * its graph or its opset. The first bytes one by one, the rest in steps, and the
     * last ones (a cut between the graph and opset_import parses) one by one. */
    CHECK(size > 256);
    for (size_t cut = 1; cut < size; cut += cut < 64 || cut + 32 >= size ? 1 : size / 61) {
        unsigned char *copy = malloc(cut);
        CHECK(copy);
        memcpy(copy, bytes, cut);
        st = gaio_model_load_memory(copy, cut, &m);
        if (st != GAIO_ERR_INVALID_ARG) {
            fprintf(stderr, "the first %zu of %zu bytes: gaio_model_load_memory returned %s (%s)\n", cut, size,
                    gaio_status_string(st), st == GAIO_OK ? "" : gaio_last_error());
            exit(1);
        }
        CHECK(m == NULL);
        free(copy);
    }

    OK(gaio_model_load_memory(bytes, size, &m));
    free(bytes);
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_retain(NULL), "gaio_model_retain");
    OK(gaio_model_release(NULL));
    gaio_model_summary s;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_summarize(NULL, &s), "gaio_model_summarize");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_summarize(m, NULL), "gaio_model_summarize");
    gaio_model_io io;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_input(NULL, 0, &io), "gaio_model_input");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_output(NULL, 0, &io), "gaio_model_output");
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_output(m, 0, NULL), "gaio_model_output");
    const char *name = NULL, *op = NULL;
    FAILS(GAIO_ERR_INVALID_ARG, gaio_model_node(NULL, 0, &name, &op), "gaio_model_node");

    /* Many references, dropped in any order: the last one frees it (ASan would see a
     * leak or a use after free). */
    for (int i = 0; i < 10; i++) OK(gaio_model_retain(m));
    for (int i = 0; i < 10; i++) {
        OK(gaio_model_summarize(m, &s));
        OK(gaio_model_release(m));
    }
    OK(gaio_model_summarize(m, &s));
    CHECK(s.nodes > 0);
    OK(gaio_model_release(m));
}

/* A libgaio built without ONNX support: every call says so, and nothing crashes. */
static void test_no_onnx(void) {
    static const unsigned char bytes[16] = {0x08, 0x08};
    gaio_model *m = (gaio_model *)&m;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_model_load("model.onnx", &m), "gaio_model_load");
    CHECK(strstr(gaio_last_error(), "ONNX") && m == NULL);
    m = (gaio_model *)&m;
    FAILS(GAIO_ERR_NOT_SUPPORTED, gaio_model_load_memory(bytes, sizeof bytes, &m), "gaio_model_load_memory");
    CHECK(m == NULL);
    OK(gaio_model_release(NULL));
    printf("built without ONNX support: the model calls say so\n");
}

static void run(int device) {
    (void)device; /* the loader is host code, the same on every device */
    if (getenv("GAIO_MODEL_NO_ONNX")) {
        test_no_onnx();
        return;
    }
    int ngood = 0, nbad = 0;
    uint64_t seed = test_seed();
    run_manifest(&ngood, &nbad, &seed);
    /* a manifest cut short must not pass as a success */
    CHECK(ngood >= 5 && nbad >= 10);
    printf("%d good and %d bad models checked\n", ngood, nbad);
    test_arguments();
}
