/* `gaio classify`: an ONNX image classifier over image files, end to end. */
#ifndef GAIO_TOOLS_CMD_CLASSIFY_H
#define GAIO_TOOLS_CMD_CLASSIFY_H

#include <stdio.h>

/* argv[0] is "classify". Exit status: 0 when every image was classified, 1 when a file
 * or a gaio call failed (the other images are still classified where possible), 2 for
 * a usage error. stdout: one line per image, then a summary line. */
int gaio_cmd_classify(int argc, char **argv);
/* The command's part of `gaio help` ("  classify ..."); _lead: with another lead
 * ("usage: gaio " for `gaio classify --help`). */
void gaio_cmd_classify_usage(FILE *out);
void gaio_cmd_classify_usage_lead(FILE *out, const char *lead);

#endif
