/* The device table: device 0 is the host, CUDA devices follow. */
#include <string.h>

#include "core/object.h"

static int cuda_count(void) {
    const gaio_backend *cuda = gaio__cuda_backend();
    return cuda ? cuda->device_count() : 0;
}

gaio_status gaio__device_backend_for(const char *fn, int device, const gaio_backend **be, int *ordinal) {
    if (device == 0) {
        *be = gaio__cpu_backend();
        *ordinal = 0;
        return GAIO_OK;
    }
    int n = cuda_count();
    if (device < 0 || device > n)
        return gaio__fail(GAIO_ERR_NOT_FOUND, fn,
                          "device %d does not exist; devices are 0 (the host)%s (this process has %d CUDA device%s%s)",
                          device, n ? " and 1.." : "", n, n == 1 ? "" : "s",
                          gaio__cuda_backend() ? "" : "; this build has no CUDA backend");
    *be = gaio__cuda_backend();
    *ordinal = device - 1;
    return GAIO_OK;
}

gaio_status gaio_device_count(int *count) {
    GAIO_REQUIRE_PTR(count);
    *count = 1 + cuda_count();
    return GAIO_OK;
}

gaio_status gaio_backend_status(gaio_device_kind kind, const char **description) {
    GAIO_REQUIRE_PTR(description);
    *description = "";
    GAIO_REQUIRE(kind == GAIO_DEVICE_HOST || kind == GAIO_DEVICE_CUDA, "kind %d is not a gaio_device_kind",
                 (int)kind);
    if (kind == GAIO_DEVICE_HOST) {
        *description = "ready: device 0, the host";
        return GAIO_OK;
    }
#ifdef GAIO_HAVE_CUDA
    extern gaio_status gaio__cuda_describe(const char **description);
    return gaio__cuda_describe(description);
#else
    *description = "not built: no CUDA toolkit was found when this libgaio was built";
    return GAIO_ERR_NOT_SUPPORTED;
#endif
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

const gaio_backend *gaio__cuda_backend(void) {
#ifdef GAIO_HAVE_CUDA
    extern const gaio_backend *gaio__cuda_backend_table(void);
    return gaio__cuda_backend_table();
#else
    return NULL;
#endif
}
