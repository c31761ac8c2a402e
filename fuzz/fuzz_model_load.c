/* libFuzzer harness for the ONNX loader: any bytes into gaio_model_load_memory, and
 * when they load, every inspection call over the result. A finding is a crash, a
 * sanitizer report or a leak; a refusal (any status but GAIO_OK) is the expected
 * answer to most inputs. */
#include <stddef.h>
#include <stdint.h>

#include "gaio/gaio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gaio_model *m = NULL;
    if (gaio_model_load_memory(data, size, &m) != GAIO_OK) return 0;
    gaio_model_summary s;
    if (gaio_model_summarize(m, &s) == GAIO_OK) {
        gaio_model_io io;
        for (int32_t i = 0; i < s.inputs; i++) gaio_model_input(m, i, &io);
        for (int32_t i = 0; i < s.outputs; i++) gaio_model_output(m, i, &io);
        const char *name, *op;
        for (int32_t i = 0; i < s.nodes; i++) gaio_model_node(m, i, &name, &op);
    }
    gaio_model_release(m);
    return 0;
}
