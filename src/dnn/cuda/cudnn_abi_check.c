/* Build-time check of cudnn_values.h against cuDNN's own header, where the build has
 * one: gaio declares what it calls itself (so that it builds without cuDNN's headers),
 * and a value cuDNN changed would otherwise go unseen until a call failed. */
#if defined(__has_include)
#if __has_include(<cudnn_graph.h>)
#include <cudnn_graph.h>

#include "dnn/cuda/cudnn_values.h"

#define GAIO_CUDNN_CHECK(name, value) _Static_assert((long long)(name) == (value), #name " differs from cuDNN's header");
GAIO_CUDNN_VALUES(GAIO_CUDNN_CHECK)
#endif
#endif

typedef int gaio__cudnn_abi_checked; /* a translation unit must declare something */
