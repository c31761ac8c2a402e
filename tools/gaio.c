/* gaio: the command-line tool.
 *
 *   gaio info       devices and backends of this build on this machine
 *   gaio bench      the CPU-backend benchmark, then the CUDA-backend one (the same as
 *                   bench/gaio_bench_cpu and bench/gaio_bench_cuda; the CUDA part says
 *                   "skipped" where there is no GPU)
 *   gaio version    versions of the tool's headers and of the library
 *
 * Exit status: 0 on success (also on machines without a GPU), 1 when a gaio call
 * failed, 2 for a usage error. */
#include <stdio.h>
#include <string.h>

#include "gaio/gaio.h"

#if GAIO_CLI_HAVE_BENCH
#include "bench_cpu.h"
#include "bench_cuda.h"
#endif

static int failed(gaio_status st, const char *what) {
    fprintf(stderr, "gaio: %s failed: %s: %s\n", what, gaio_status_string(st), gaio_last_error());
    return 1;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: gaio <command>\n"
            "\n"
            "commands:\n"
            "  info       list the devices and the backends of this build\n"
            "  bench      run the benchmarks: CPU backend (submission, latency, throughput),\n"
            "             then CUDA backend against raw CUDA (launch, completion round trip,\n"
            "             throughput, head-of-line blocking, pool); skipped without a GPU\n"
            "  version    print the version\n"
            "  help       print this help (also --help, -h)\n"
            "\n"
            "environment:\n"
            "  GAIO_CPU_WORKERS   threads of the CPU backend's worker pool (default: online cores)\n");
}

static const char *kind_name(gaio_device_kind k) {
    switch (k) {
    case GAIO_DEVICE_HOST: return "host";
    case GAIO_DEVICE_CUDA: return "cuda";
    }
    return "unknown";
}

static void print_bytes(uint64_t bytes) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    printf("%.1f %s (%llu bytes)", v, units[u], (unsigned long long)bytes);
}

static int cmd_version(void) {
    int lib = gaio_version();
    printf("gaio %d.%d.%d (library %d.%d.%d)\n", GAIO_VERSION_MAJOR, GAIO_VERSION_MINOR, GAIO_VERSION_PATCH,
           lib / 10000, lib / 100 % 100, lib % 100);
    return 0;
}

static int cmd_info(void) {
    int count = 0;
    gaio_status st = gaio_device_count(&count);
    if (st != GAIO_OK) return failed(st, "gaio_device_count");
    cmd_version();

    printf("\ndevices: %d\n", count);
    for (int d = 0; d < count; d++) {
        gaio_device_props p;
        st = gaio_device_get_props(d, &p);
        if (st != GAIO_OK) return failed(st, "gaio_device_get_props");
        printf("  [%d] %s #%d: %s\n", d, kind_name(p.kind), p.ordinal, p.name);
        printf("      memory           ");
        print_bytes(p.total_memory);
        printf("\n");
        if (p.kind == GAIO_DEVICE_HOST) {
            printf("      processors       %d worker threads\n", p.processor_count);
        } else {
            printf("      compute          %d.%d\n", p.compute_major, p.compute_minor);
            printf("      processors       %d SMs\n", p.processor_count);
        }
        printf("      priorities       0 (normal) .. %d (most urgent)\n", p.max_priority);
        printf("      pitch alignment  %zu bytes\n", p.pitch_alignment);
    }

    printf("\nbackends:\n");
    const gaio_device_kind kinds[] = {GAIO_DEVICE_HOST, GAIO_DEVICE_CUDA};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const char *text = "";
        gaio_status bst = gaio_backend_status(kinds[i], &text);
        printf("  %-5s %s%s%s\n", kind_name(kinds[i]), bst == GAIO_OK ? "" : gaio_status_string(bst),
               bst == GAIO_OK ? "" : ": ", text);
    }
    return 0;
}

static int cmd_bench(void) {
#if GAIO_CLI_HAVE_BENCH
    int cpu = gaio_bench_cpu_run(stdout);
    printf("\n");
    /* Runs even when the CPU part failed: each reports its own failures. */
    int cuda = gaio_bench_cuda_run(stdout);
    return cpu == 0 && cuda == 0 ? 0 : 1;
#else
    fprintf(stderr, "gaio: the benchmark was not built (configure with -DGAIO_BUILD_BENCH=ON)\n");
    return 1;
#endif
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) return argc == 2 ? cmd_version() : (usage(stderr), 2);
    if (argc != 2) {
        fprintf(stderr, "gaio: '%s' takes no arguments\n", cmd);
        return 2;
    }
    if (!strcmp(cmd, "info")) return cmd_info();
    if (!strcmp(cmd, "bench")) return cmd_bench();
    fprintf(stderr, "gaio: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
