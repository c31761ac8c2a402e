/* Border and flip codes as the geometry kernels see them (the gaio_border and
 * gaio_flip_mode values of gaio/image.h), and OpenCV's borderInterpolate, shared
 * by the host kernels and the CUDA kernels. */
#ifndef GAIO_IMAGE_BORDER_MATH_H
#define GAIO_IMAGE_BORDER_MATH_H

#include "image/kimg.h"

enum { BORDER_CONSTANT = 0, BORDER_REPLICATE = 1, BORDER_REFLECT = 2, BORDER_REFLECT_101 = 3, BORDER_WRAP = 4 };
enum { FLIP_HORIZONTAL = 1, FLIP_VERTICAL = 2 };

/* borderInterpolate in closed form (borders may be many times wider than the
 * image, and no loop runs for them): the src index of p, or -1 for the constant. */
GAIO_HD int gaio_border_index(int p, int len, int type) {
    if ((unsigned)p < (unsigned)len) return p;
    switch (type) {
    case BORDER_REPLICATE: return p < 0 ? 0 : len - 1;
    case BORDER_REFLECT:
    case BORDER_REFLECT_101: {
        if (len == 1) return 0;
        int delta = type == BORDER_REFLECT_101, period = 2 * len - 2 * delta;
        int q = p % period;
        if (q < 0) q += period;
        return q < len ? q : period - 1 + delta - q;
    }
    case BORDER_WRAP: {
        int q = p % len;
        return q < 0 ? q + len : q;
    }
    default: return -1;
    }
}

#endif
