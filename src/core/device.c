/* The device table: device 0 is the host, then each further backend's devices in
 * the order of gaio__backends (CUDA devices follow the host). */
#include <string.h>

#include "core/object.h"

gaio_status gaio__device_backend_for(const char *fn, int device, const gaio_backend **be, int *ordinal) {
    int first = 0, total = 0;
    for (const gaio_backend *const *b = gaio__backends; *b; b++) {
        int n = (*b)->device_count();
        if (device >= first && device < first + n) {
            *be = *b;
            *ordinal = device - first;
            return GAIO_OK;
        }
        first += n;
        total += n;
    }
    int cuda = total - 1; /* devices past the host */
    bool have_cuda = false;
    for (const gaio_backend *const *b = gaio__backends; *b; b++) have_cuda |= (*b)->kind == GAIO_DEVICE_CUDA;
    return gaio__fail(GAIO_ERR_NOT_FOUND, fn,
                      "device %d does not exist; devices are 0 (the host)%s (this process has %d CUDA device%s%s)",
                      device, cuda ? " and 1.." : "", cuda, cuda == 1 ? "" : "s",
                      have_cuda ? "" : "; this build has no CUDA backend");
}

gaio_status gaio_device_count(int *count) {
    GAIO_REQUIRE_PTR(count);
    int n = 0;
    for (const gaio_backend *const *b = gaio__backends; *b; b++) n += (*b)->device_count();
    *count = n;
    return GAIO_OK;
}

gaio_status gaio_backend_status(gaio_device_kind kind, const char **description) {
    GAIO_REQUIRE_PTR(description);
    *description = "";
    GAIO_REQUIRE(kind == GAIO_DEVICE_HOST || kind == GAIO_DEVICE_CUDA, "kind %d is not a gaio_device_kind",
                 (int)kind);
    for (const gaio_backend *const *b = gaio__backends; *b; b++) {
        if ((*b)->kind != kind) continue;
        if (!(*b)->describe) {
            *description = "ready";
            return GAIO_OK;
        }
        return (*b)->describe(description);
    }
    *description = "not built: no CUDA toolkit was found when this libgaio was built";
    return GAIO_ERR_NOT_SUPPORTED;
}

gaio_status gaio_device_get_props(int device, gaio_device_props *props) {
    GAIO_REQUIRE_PTR(props);
    const gaio_backend *be;
    int ordinal;
    gaio_status st = gaio__device_backend(device, &be, &ordinal);
    if (st != GAIO_OK) return st;
    memset(props, 0, sizeof *props);
    return be->device_props(ordinal, props);
}

const gaio_backend *gaio__code_backend(void) {
    for (const gaio_backend *const *b = gaio__backends; *b; b++)
        if ((*b)->lib_load) return *b;
    return NULL;
}
