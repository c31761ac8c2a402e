/* gaio — version of this header set. */
#ifndef GAIO_VERSION_H
#define GAIO_VERSION_H

#define GAIO_VERSION_MAJOR 0
#define GAIO_VERSION_MINOR 1
#define GAIO_VERSION_PATCH 0
/* One integer that grows with every release: MAJOR*10000 + MINOR*100 + PATCH. */
#define GAIO_VERSION (GAIO_VERSION_MAJOR * 10000 + GAIO_VERSION_MINOR * 100 + GAIO_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library actually loaded, to compare against GAIO_VERSION. */
int gaio_version(void);

#ifdef __cplusplus
}
#endif
#endif
