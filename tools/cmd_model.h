/* `gaio model`: build (or load) an engine of an ONNX model, show its plan, time it. */
#ifndef GAIO_TOOLS_CMD_MODEL_H
#define GAIO_TOOLS_CMD_MODEL_H

#include <stdio.h>

/* argv[0] is "model". Exit status: 0 on success, 1 when a gaio call failed (a model
 * gaio refuses: the message names the node and its operator) or a file could not be
 * read or written, 2 for a usage error. stdout: the report; errors are one line on
 * stderr. */
int gaio_cmd_model(int argc, char **argv);

/* The command's part of `gaio help`; lead is "  " there, "usage: gaio " for
 * `gaio model --help`. */
void gaio_cmd_model_usage(FILE *out, const char *lead);

#endif
