/* gaio-sys's layout probe (build.rs compiles and runs it): prints, as Rust constants,
 * the size and field offsets of every public struct gaio-sys declares, and the values
 * of the enums it copies, as this C compiler lays them out. */
#include <stddef.h>
#include <stdio.h>

#include "gaio/gaio.h"

#define SIZE(T) printf("pub const SIZEOF_%s: usize = %zu;\n", #T, sizeof(T))
#define OFF(T, f) printf("pub const OFFSET_%s_%s: usize = %zu;\n", #T, #f, offsetof(T, f))
#define VAL(x) printf("pub const VALUE_%s: i64 = %lld;\n", #x, (long long)(x))

int main(void) {
    SIZE(gaio_device_props);
    OFF(gaio_device_props, kind);
    OFF(gaio_device_props, ordinal);
    OFF(gaio_device_props, name);
    OFF(gaio_device_props, total_memory);
    OFF(gaio_device_props, compute_major);
    OFF(gaio_device_props, compute_minor);
    OFF(gaio_device_props, processor_count);
    OFF(gaio_device_props, max_priority);
    OFF(gaio_device_props, pitch_alignment);
    SIZE(gaio_config);
    OFF(gaio_config, cpu_workers);
    OFF(gaio_config, wait_policy);
    SIZE(gaio_context_options);
    OFF(gaio_context_options, pool_release_threshold);
    OFF(gaio_context_options, rng_seed);
    SIZE(gaio_cq_entry);
    OFF(gaio_cq_entry, user_data);
    OFF(gaio_cq_entry, status);
    SIZE(gaio_status);
    SIZE(gaio_mem_kind);
    SIZE(gaio_device_kind);
    VAL(GAIO_ERR_USER);
    VAL(GAIO_MEM_MANAGED);
    VAL(GAIO_DEVICE_CUDA);
    VAL(GAIO_WAIT_BLOCK);
    VAL(GAIO_STREAM_DEFERRED);
    VAL(GAIO_EVENT_DISABLE_TIMING);
    VAL(GAIO_INFINITE);
    return 0;
}
