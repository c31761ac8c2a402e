/* Transposes collapsed to fewer dimensions (collapse.h): Swin's window partition
 * [B, H/w, w, W/w, w, C] -> (0, 1, 3, 2, 4, 5) is the 4-D [B*H/w, w, W/w, w*C] ->
 * (0, 2, 1, 3), which gaio_transpose (5-D at most) runs. */
#include "model/collapse.h"

#define MAXR 16

int32_t gaio__transpose_collapse(const int64_t *dims, int32_t r, const int64_t *perm, int64_t *cdims, int32_t *cperm) {
    /* Drop the size-1 input dimensions, renumbering the rest. */
    int32_t keep[MAXR], newid[MAXR], m = 0;
    for (int32_t d = 0; d < r && d < MAXR; d++) newid[d] = dims[d] == 1 ? -1 : m, keep[m] = d, m += dims[d] != 1;
    int32_t p[MAXR], pm = 0;
    for (int32_t i = 0; i < r && i < MAXR; i++)
        if (newid[perm[i]] >= 0) p[pm++] = newid[perm[i]];
    if (m == 0) {
        cdims[0] = 1, cperm[0] = 0;
        return 1;
    }
    /* Input dimensions k, k + 1 that the output keeps side by side merge: lead[k] says
     * whether k starts a merged dimension. */
    int32_t nrun = 0, lead[MAXR];
    for (int32_t k = 0; k < m; k++) lead[k] = 1;
    for (int32_t i = 1; i < pm; i++)
        if (p[i] == p[i - 1] + 1) lead[p[i]] = 0;
    int32_t rank_of[MAXR];
    for (int32_t k = 0; k < m; k++) {
        if (lead[k]) cdims[nrun++] = 1;
        rank_of[k] = nrun - 1;
        cdims[nrun - 1] *= dims[keep[k]];
    }
    int32_t c = 0;
    for (int32_t i = 0; i < pm; i++)
        if (lead[p[i]]) cperm[c++] = rank_of[p[i]];
    return nrun;
}
