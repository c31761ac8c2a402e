/* Shape profiles (engine_internal.h): TensorRT's optimization profile, min / opt / max
 * per input dimension.
 *
 * gaio plans, tunes and sizes everything for concrete shapes: an engine is built for
 * the profile's opt shapes, and the engine of any other shapes in the range is a
 * member of its family, built the first time an execution context is set to them
 * (gaio_model_exec_set_shapes) with the first build's options, then shared by every
 * context of the engine. The range's ends are checked at the first build: the model's
 * shapes must infer there (a shape chain that breaks at the smallest size fails the
 * build, not a later run). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/engine_internal.h"

#define MAXD GAIO_MODEL_MAX_NDIM

typedef struct gaio__shape_engine {
    int64_t (*dims)[MAXD]; /* per graph input */
    gaio_engine *e;         /* a reference */
    struct gaio__shape_engine *next;
} shape_engine;

static bool ranged(const gaio_engine_shape *s) {
    for (int32_t d = 0; d < MAXD; d++)
        if (s->min_dims[d] || s->max_dims[d]) return true;
    return false;
}

bool gaio__profile_given(const gaio_engine_options *o) {
    for (int32_t i = 0; o && o->shapes && i < o->nshapes; i++)
        if (ranged(&o->shapes[i])) return true;
    return false;
}

gaio_status gaio__profile_check(const char *fn, const mgraph *g, const gaio_engine_options *o) {
    for (int32_t i = 0; i < o->nshapes; i++) {
        const gaio_engine_shape *s = &o->shapes[i];
        if (!ranged(s)) continue;
        const mvalue *v = NULL;
        for (int32_t k = 0; k < g->ninputs && !v; k++)
            if (!strcmp(g->values[g->inputs[k]].name, s->name)) v = &g->values[g->inputs[k]];
        if (!v) continue; /* resolve_options names it */
        for (int32_t d = 0; d < s->ndim && d < MAXD; d++) {
            int64_t lo = s->min_dims[d], hi = s->max_dims[d], at = s->dims[d];
            if (lo < 1 || hi > (1 << 20) || lo > at || at > hi)
                return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes[%d]: dimension %d of input '%s' has the "
                                  "range min %lld, opt %lld, max %lld: 1 <= min <= opt <= max <= 1048576", (int)i,
                                  (int)d, s->name, (long long)lo, (long long)at, (long long)hi);
            if (v->dims[d] >= 0 && (lo != v->dims[d] || hi != v->dims[d]))
                return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "options->shapes[%d]: dimension %d of input '%s' is %lld "
                                  "in the model: its range must be that alone, not %lld to %lld", (int)i, (int)d,
                                  s->name, (long long)v->dims[d], (long long)lo, (long long)hi);
        }
    }
    return GAIO_OK;
}

/* Every input's dims at one end of the profile (which: 0 min, 1 max), e's own where
 * the options give no range. */
static void ends(const gaio_engine *e, int which, int64_t (*dims)[MAXD]) {
    const mgraph *g = &e->model->g;
    for (int32_t i = 0; i < g->ninputs; i++)
        for (int32_t d = 0; d < MAXD; d++)
            dims[i][d] = which ? e->prof_max[i][d] : e->prof_min[i][d];
}

gaio_status gaio__profile_set(const char *fn, gaio_engine *e, gaio_model *source, const gaio_engine_options *o) {
    const mgraph *g = &e->model->g;
    size_t n = (size_t)g->ninputs + 1;
    e->prof_min = calloc(n, sizeof *e->prof_min);
    e->prof_max = calloc(n, sizeof *e->prof_max);
    if (!e->prof_min || !e->prof_max) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    for (int32_t i = 0; i < g->ninputs; i++) {
        const xvalue *x = &e->v[g->inputs[i]];
        const gaio_engine_shape *s = NULL;
        for (int32_t k = 0; k < o->nshapes && !s; k++)
            if (!strcmp(o->shapes[k].name, g->values[g->inputs[i]].name)) s = &o->shapes[k];
        for (int32_t d = 0; d < x->ndim; d++) {
            bool r = s && ranged(s);
            e->prof_min[i][d] = r ? s->min_dims[d] : x->dims[d];
            e->prof_max[i][d] = r ? s->max_dims[d] : x->dims[d];
        }
    }
    gaio_model_retain(source);
    e->source = source;
    e->family_opts = *o;
    e->family_opts.shapes = NULL, e->family_opts.nshapes = 0;
    /* The model must infer at both ends (a cheap check; their engines wait for use). */
    int64_t(*dims)[MAXD] = calloc(n, sizeof *dims);
    if (!dims) return gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
    gaio_status st = GAIO_OK;
    for (int which = 0; which < 2 && st == GAIO_OK; which++) {
        ends(e, which, dims);
        gaio_model *c = NULL;
        st = gaio__model_concretize(fn, source, dims, &c);
        if (st == GAIO_OK) st = gaio__engine_check_graph(fn, &c->g);
        if (st != GAIO_OK)
            st = gaio__fail(st, fn, "at the profile's %s shapes: %s", which ? "largest" : "smallest", gaio_last_error());
        gaio_model_release(c);
    }
    free(dims);
    return st;
}

void gaio__profile_free(gaio_engine *e) {
    while (e->family) {
        shape_engine *f = e->family;
        e->family = f->next;
        gaio_engine_release(f->e);
        free(f->dims);
        free(f);
    }
    free(e->prof_min);
    free(e->prof_max);
    if (e->source) gaio_model_release(e->source);
    pthread_mutex_destroy(&e->family_lock);
}

static bool same(const gaio_engine *e, int64_t (*a)[MAXD], int64_t (*b)[MAXD]) {
    const mgraph *g = &e->model->g;
    for (int32_t i = 0; i < g->ninputs; i++)
        if (memcmp(a[i], b[i], (size_t)e->v[g->inputs[i]].ndim * sizeof **a)) return false;
    return true;
}

gaio_status gaio__profile_engine(const char *fn, gaio_engine *e, int64_t (*dims)[MAXD], gaio_engine **out) {
    *out = NULL;
    const mgraph *g = &e->model->g;
    bool own = true;
    for (int32_t i = 0; i < g->ninputs; i++) {
        const xvalue *x = &e->v[g->inputs[i]];
        for (int32_t d = 0; d < x->ndim; d++) {
            own = own && dims[i][d] == x->dims[d];
            int64_t lo = e->prof_min ? e->prof_min[i][d] : x->dims[d], hi = e->prof_max ? e->prof_max[i][d] : x->dims[d];
            if (dims[i][d] < lo || dims[i][d] > hi)
                return gaio__fail(GAIO_ERR_INVALID_ARG, fn, "dimension %d of input '%s' is %lld: the engine takes %lld "
                                  "to %lld%s", (int)d, g->values[g->inputs[i]].name, (long long)dims[i][d],
                                  (long long)lo, (long long)hi,
                                  e->prof_min ? "" : " (built without a profile: its own shapes only)");
        }
    }
    if (own) return *out = e, GAIO_OK;
    pthread_mutex_lock(&e->family_lock); /* one build per shape, however many contexts ask */
    shape_engine *f = e->family;
    while (f && !same(e, f->dims, dims)) f = f->next;
    gaio_status st = GAIO_OK;
    if (!f) {
        int32_t n = g->ninputs;
        gaio_engine_shape *shapes = calloc((size_t)n + 1, sizeof *shapes);
        f = calloc(1, sizeof *f);
        if (f) f->dims = calloc((size_t)n + 1, sizeof *f->dims);
        if (!shapes || !f || !f->dims) st = gaio__fail(GAIO_ERR_NO_MEMORY, fn, "out of host memory");
        for (int32_t i = 0; i < n && st == GAIO_OK; i++) {
            shapes[i].name = g->values[g->inputs[i]].name;
            shapes[i].ndim = e->v[g->inputs[i]].ndim;
            memcpy(shapes[i].dims, dims[i], sizeof shapes[i].dims);
            memcpy(f->dims[i], dims[i], sizeof f->dims[i]);
        }
        gaio_engine_options o = e->family_opts;
        o.shapes = shapes, o.nshapes = n;
        if (st == GAIO_OK) st = gaio__engine_build(fn, e->source, e->ctx, &o, &f->e);
        free(shapes);
        if (st == GAIO_OK) {
            f->next = e->family, e->family = f;
        } else if (f) {
            free(f->dims);
            free(f);
            f = NULL;
        }
    }
    pthread_mutex_unlock(&e->family_lock);
    if (st == GAIO_OK) *out = f->e;
    return st;
}
