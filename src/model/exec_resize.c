/* Resize and Upsample beyond the whole-factor broadcast copy: one gaio_resize2d over
 * the step's tensors, with what infer_resize.c resolved at load. */
#include "model/infer_resize.h"

gaio_status gaio__exec_resize2d(gaio_stream *s, const mnode *n, const gaio_tensor *x, const gaio_tensor *y) {
    const mattrs *a = &n->a;
    gaio_resize_params p = {
        .mode = (gaio_resize_mode)a->rs_mode,
        .coord = (gaio_resize_coord)a->rs_coord,
        .nearest = (gaio_resize_nearest)a->rs_nearest,
        .scale = {a->rs_scale[0], a->rs_scale[1]},
        .roi = {a->rs_roi[0], a->rs_roi[1], a->rs_roi[2], a->rs_roi[3]},
        .cubic_coeff_a = a->rs_cubic_a,
        .exclude_outside = a->rs_exclude_outside,
        .extrapolation_value = a->rs_extrapolation,
        .antialias = a->rs_antialias,
    };
    return gaio_resize2d(s, x, y, &p);
}
