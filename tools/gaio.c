/* gaio: the command-line tool.
 *
 *   gaio info       devices and backends of this build on this machine
 *   gaio bench      [core|image]: the core benchmarks (bench/gaio_bench_cpu, _cuda), then
 *                   the image ops against OpenCV, NPP and torchvision (gaio_bench_image);
 *                   GPU parts say "skipped" where there is no GPU
 *   gaio version    versions of the tool's headers and of the library
 *   gaio resize     IN OUT WxH: resize a PNG or JPEG image on a device (cmd_image.c)
 *   gaio convert    IN OUT --op OP: flip, rotate, crop, border, warp, color... on a device
 *   gaio classify   MODEL.onnx IMAGES...: an ONNX classifier over image files (classify/)
 *   gaio model      MODEL.onnx: build an engine, print its plan, time it (cmd_model.c)
 *
 * `gaio <command> --help` (or -h) prints that command's usage on stdout and exits 0.
 *
 * Exit status: 0 on success (also on machines without a GPU), 1 when a gaio call
 * failed or a file could not be read or written, 2 for a usage error. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "classify/cmd_classify.h"
#include "cmd_image.h"
#include "cmd_model.h"
#include "gaio/gaio.h"

#if GAIO_CLI_HAVE_BENCH
#include "bench_cpu.h"
#include "bench_cuda.h"
#include "bench_image_cpu.h"
#include "bench_image_cuda.h"
#endif

static int failed(gaio_status st, const char *what) {
    fprintf(stderr, "gaio: %s failed: %s: %s\n", what, gaio_status_string(st), gaio_last_error());
    return 1;
}

/* lead: "  " in gaio help's list of commands, "usage: gaio " for the command's --help. */
static void usage_info(FILE *out, const char *lead) {
    fprintf(out, "%sinfo       list the devices and the backends of this build\n", lead);
}

static void usage_bench(FILE *out, const char *lead) {
    fprintf(out,
            "%sbench [core|image]\n"
            "             run the benchmarks (both parts by default): core: CPU backend\n"
            "             (submission, latency, throughput), then CUDA backend against raw CUDA\n"
            "             (launch, completion round trip, throughput, head-of-line blocking,\n"
            "             pool); image: resize and preprocess against OpenCV (CPU), NPP and\n"
            "             torchvision (GPU), as ratios of the bandwidth floor; GPU parts are\n"
            "             skipped without a GPU\n",
            lead);
}

static void usage_version(FILE *out, const char *lead) {
    fprintf(out, "%sversion    print the version (also --version)\n", lead);
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: gaio <command> [arguments]   (gaio <command> --help: that command's usage)\n"
            "\n"
            "commands:\n");
    usage_info(out, "  ");
    usage_bench(out, "  ");
    usage_version(out, "  ");
    fprintf(out, "  help       print this help (also --help, -h)\n");
    gaio_cmd_image_usage(out);
    gaio_cmd_classify_usage(out);
    gaio_cmd_model_usage(out, "  ");
    fprintf(out,
            "\n"
            "environment:\n"
            "  GAIO_CPU_WORKERS   threads of the CPU backend's worker pool (default: online cores)\n");
}

static bool is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

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

/* `gaio bench [core|image]`: both parts by default. Each part runs even when an
 * earlier one failed: each reports its own failures. */
static int cmd_bench(const char *which) {
#if GAIO_CLI_HAVE_BENCH
    bool core = !which || !strcmp(which, "core"), image = !which || !strcmp(which, "image");
    if (!core && !image) {
        fprintf(stderr, "gaio bench: unknown part '%s' (core or image)\n", which);
        return 2;
    }
    int fails = 0;
    if (core) {
        fails += gaio_bench_cpu_run(stdout) != 0;
        printf("\n");
        fails += gaio_bench_cuda_run(stdout) != 0;
    }
    if (image) {
        if (core) printf("\n");
        fails += gaio_bench_image_cpu_run(stdout) != 0;
        printf("\n");
        fails += gaio_bench_image_cuda_run(stdout) != 0;
    }
    return fails ? 1 : 0;
#else
    (void)which;
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
    if (!strcmp(cmd, "help") || is_help(cmd)) {
        usage(stdout);
        return 0;
    }
    /* --help of the commands parsed here; the others parse their own. */
    if (argc == 3 && is_help(argv[2])) {
        void (*u)(FILE *, const char *) = !strcmp(cmd, "info")                                 ? usage_info
                                          : !strcmp(cmd, "bench")                              ? usage_bench
                                          : !strcmp(cmd, "version") || !strcmp(cmd, "--version") ? usage_version
                                                                                               : NULL;
        if (u) {
            u(stdout, "usage: gaio ");
            return 0;
        }
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) return argc == 2 ? cmd_version() : (usage(stderr), 2);
    if (!strcmp(cmd, "resize")) return gaio_cmd_resize(argc - 1, argv + 1);
    if (!strcmp(cmd, "convert")) return gaio_cmd_convert(argc - 1, argv + 1);
    if (!strcmp(cmd, "classify")) return gaio_cmd_classify(argc - 1, argv + 1);
    if (!strcmp(cmd, "model")) return gaio_cmd_model(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench") && argc <= 3) return cmd_bench(argc > 2 ? argv[2] : NULL);
    if (argc != 2) {
        fprintf(stderr, "gaio: '%s' takes no arguments\n", cmd);
        return 2;
    }
    if (!strcmp(cmd, "info")) return cmd_info();
    fprintf(stderr, "gaio: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
