/* The dnn layer's driver table: see dnn_driver.h. */
#include "dnn/cuda/dnn_driver.h"

#include <pthread.h>

#include "core/error.h"
#include "core/native.h"

static gaio_dnn_cu_table table;
static const char *missing; /* the first function the driver lacks, or NULL */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fill(void) {
#define GAIO_DNN_CU_LOOKUP(name)                                                                  \
    {                                                                                             \
        gaio__native_proc_fn f = gaio__native_proc(GAIO_DEVICE_CUDA, #name);                      \
        if (!f && !missing) missing = #name;                                                      \
        table.name = (__typeof__(table.name))f;                                                   \
    }
    GAIO_DNN_CU_FUNCTIONS(GAIO_DNN_CU_LOOKUP)
#undef GAIO_DNN_CU_LOOKUP
}

const gaio_dnn_cu_table *gaio__dnn_cu(const char *fn) {
    pthread_once(&once, fill);
    if (missing) {
        gaio__fail(GAIO_ERR_DRIVER, fn, "the CUDA driver gives no %s (or no CUDA driver was loaded)", missing);
        return NULL;
    }
    return &table;
}

gaio_status gaio__dnn_cu_fail(const char *fn, const char *call, CUresult r) {
    return gaio__native_fail(GAIO_DEVICE_CUDA, fn, call, (int)r);
}
