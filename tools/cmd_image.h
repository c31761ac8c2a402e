/* `gaio resize` and `gaio convert`: image files through gaio's image ops. */
#ifndef GAIO_TOOLS_CMD_IMAGE_H
#define GAIO_TOOLS_CMD_IMAGE_H

#include <stdio.h>

/* argv[0] is the command's name ("resize", "convert"). Exit status: 0 on success,
 * 1 when reading, writing or a gaio call failed, 2 for a usage error. Errors are
 * one line on stderr; stdout gets one summary line on success (none with -q). */
int gaio_cmd_resize(int argc, char **argv);
int gaio_cmd_convert(int argc, char **argv);

/* The commands' part of `gaio help`. */
void gaio_cmd_image_usage(FILE *out);

#endif
