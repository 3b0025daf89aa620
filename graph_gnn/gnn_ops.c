/* graph_gnn/gnn_ops.c: the GNN's ops, kann-style: each one function that runs forward or backward
 * on caller-owned buffers (row-major, explicit leading dimensions), plus the seeded RNG.
 * Backward passes accumulate into input gradients so that shared inputs need no extra buffers;
 * loops run in a fixed order, so results are bit-reproducible for a fixed OpenBLAS thread count. */
#include "graph_gnn/graph_gnn.h"

#include <math.h>
#include <string.h>

/* y[m][n] = x[m][k] w[n][k]^T + b
 * backward: dw[n][k] += dy^T x,  db[n] += sum_i dy[i],  dx[m][k] += dy w */
void pp_gnn_op_linear(int backward, int m, int k, int n, const float *x, float *dx, int ldx,
                      const float *w, float *dw, int ldw, const float *b, float *db, float *y,
                      const float *dy, int ldy)
{
    if (m <= 0 || n <= 0) return;
    if (!backward) {
        for (int i = 0; i < m; i++) {
            float *yi = y + (size_t)i * ldy;
            if (b)
                memcpy(yi, b, (size_t)n * sizeof(float));
            else
                memset(yi, 0, (size_t)n * sizeof(float));
        }
        if (k > 0)
            pp_gnn_sgemm(0, 1, m, n, k, x, ldx, w, ldw, y, ldy);
        return;
    }
    if (db)
        for (int i = 0; i < m; i++) {
            const float *dyi = dy + (size_t)i * ldy;
            for (int j = 0; j < n; j++) db[j] += dyi[j];
        }
    if (k <= 0) return;
    if (dw)
        pp_gnn_sgemm(1, 0, n, k, m, dy, ldy, x, ldx, dw, ldw);
    if (dx)
        pp_gnn_sgemm(0, 0, m, k, n, dy, ldy, w, ldw, dx, ldx);
}

/* y = max(y, 0);  backward: dy = dy * [y > 0] (y is the stored output) */
void pp_gnn_op_relu(int backward, int m, int n, float *y, float *dy, int ld)
{
    for (int i = 0; i < m; i++) {
        float *yi = y + (size_t)i * ld;
        if (!backward) {
            /* a select the compiler vectorizes; NaN and -0 become +0 as with a branch */
            for (int j = 0; j < n; j++) yi[j] = yi[j] > 0.0f ? yi[j] : 0.0f;
        } else {
            float *dyi = dy + (size_t)i * ld;
            for (int j = 0; j < n; j++)
                if (!(yi[j] > 0.0f)) dyi[j] = 0.0f;
        }
    }
}

/* The forward of pp_gnn_op_aggregate without the argmax: the first message sets the max and a
 * later one replaces it when greater, as there, so the figures are the same bits (NaN included). */
static void aggregate_forward_only(int n_nodes, int h, const int *slot_ptr, const int *slot_nb,
                                   const float *P, const float *Q, float *M, int ldm)
{
    for (int i = 0; i < n_nodes; i++) {
        int s0 = slot_ptr[i], s1 = slot_ptr[i + 1], deg = s1 - s0;
        float *restrict mean = M + (size_t)i * ldm, *restrict mx = mean + h;
        if (deg == 0) {
            memset(mean, 0, (size_t)2 * h * sizeof(float));
            continue;
        }
        const float *p = P + (size_t)slot_nb[s0] * h, *q = Q + (size_t)s0 * h;
        for (int c = 0; c < h; c++) {
            float v = p[c] + q[c];
            mean[c] = 0.0f + v;
            mx[c] = v;
        }
        for (int s = s0 + 1; s < s1; s++) {
            p = P + (size_t)slot_nb[s] * h;
            q = Q + (size_t)s * h;
            for (int c = 0; c < h; c++) {
                float v = p[c] + q[c];
                mean[c] += v;
                mx[c] = v > mx[c] ? v : mx[c];
            }
        }
        float inv = 1.0f / (float)deg;
        for (int c = 0; c < h; c++) mean[c] *= inv;
    }
}

/* msg_s = P[nb_s] + Q_s for the slots s of node i (its in- and out-edges);
 * M[i] = [ (1/deg_i) sum_s msg_s ; max_s msg_s ]  (both 0 when deg_i = 0)
 * backward: dmsg_s = dM_mean[i] / deg_i + [s = argmax] dM_max[i];
 *           dQ_s += dmsg_s,  dP[nb_s] += dmsg_s */
void pp_gnn_op_aggregate(int backward, int n_nodes, int h, const int *slot_ptr, const int *slot_nb,
                         const float *P, float *dP, const float *Q, float *dQ, float *M,
                         const float *dM, int ldm, int *argmax)
{
    if (!backward && !argmax) {
        aggregate_forward_only(n_nodes, h, slot_ptr, slot_nb, P, Q, M, ldm);
        return;
    }
    for (int i = 0; i < n_nodes; i++) {
        int s0 = slot_ptr[i], s1 = slot_ptr[i + 1], deg = s1 - s0;
        int *am = argmax + (size_t)i * h;
        if (!backward) {
            float *mean = M + (size_t)i * ldm, *mx = mean + h;
            if (deg == 0) {
                memset(mean, 0, (size_t)2 * h * sizeof(float));
                for (int c = 0; c < h; c++) am[c] = -1;
                continue;
            }
            for (int c = 0; c < h; c++) {
                mean[c] = 0.0f;
                mx[c] = -INFINITY;
                am[c] = -1;
            }
            for (int s = s0; s < s1; s++) {
                const float *p = P + (size_t)slot_nb[s] * h, *q = Q + (size_t)s * h;
                for (int c = 0; c < h; c++) {
                    float v = p[c] + q[c];
                    mean[c] += v;
                    if (v > mx[c] || am[c] < 0) {
                        mx[c] = v;
                        am[c] = s;
                    }
                }
            }
            float inv = 1.0f / (float)deg;
            for (int c = 0; c < h; c++) mean[c] *= inv;
        } else {
            if (deg == 0) continue;
            const float *dmean = dM + (size_t)i * ldm, *dmx = dmean + h;
            float inv = 1.0f / (float)deg;
            for (int s = s0; s < s1; s++) {
                float *dp = dP ? dP + (size_t)slot_nb[s] * h : NULL, *dq = dQ + (size_t)s * h;
                for (int c = 0; c < h; c++) {
                    float g = dmean[c] * inv + (am[c] == s ? dmx[c] : 0.0f);
                    dq[c] += g;
                    if (dp) dp[c] += g;
                }
            }
        }
    }
}

/* out = [ (1/n) sum_i X[i] ; max_i X[i] ]
 * backward: dX[i] += dout_mean / n + [i = argmax] dout_max */
void pp_gnn_op_pool(int backward, int n, int h, const float *X, float *dX, int ldx, float *out,
                    const float *dout, int *argmax)
{
    float inv = 1.0f / (float)n;
    if (!backward) {
        float *mean = out, *mx = out + h;
        for (int c = 0; c < h; c++) {
            mean[c] = 0.0f;
            mx[c] = X[c];
            if (argmax) argmax[c] = 0;
        }
        for (int i = 0; i < n; i++) {
            const float *xi = X + (size_t)i * ldx;
            if (!argmax) { /* forward only: the same figures */
                for (int c = 0; c < h; c++) {
                    mean[c] += xi[c];
                    mx[c] = xi[c] > mx[c] ? xi[c] : mx[c];
                }
                continue;
            }
            for (int c = 0; c < h; c++) {
                mean[c] += xi[c];
                if (xi[c] > mx[c]) {
                    mx[c] = xi[c];
                    argmax[c] = i;
                }
            }
        }
        for (int c = 0; c < h; c++) mean[c] *= inv;
        return;
    }
    for (int i = 0; i < n; i++) {
        float *dxi = dX + (size_t)i * ldx;
        for (int c = 0; c < h; c++) dxi[c] += dout[c] * inv;
    }
    for (int c = 0; c < h; c++) dX[(size_t)argmax[c] * ldx + c] += dout[h + c];
}

/* C[i][0..d) = g;  backward: dg += sum_i dC[i][0..d) */
void pp_gnn_op_broadcast(int backward, int n, int d, const float *g, float *dg, float *C,
                         const float *dC, int ldc)
{
    if (d <= 0) return;
    for (int i = 0; i < n; i++) {
        if (!backward) {
            memcpy(C + (size_t)i * ldc, g, (size_t)d * sizeof(float));
        } else {
            const float *dci = dC + (size_t)i * ldc;
            for (int c = 0; c < d; c++) dg[c] += dci[c];
        }
    }
}

/* L = scale * sum_t mask_t (o_t - y_t)^2;  backward: do_t += 2 scale mask_t (o_t - y_t) */
double pp_gnn_op_mse(int backward, int t, const float *o, float *d_o, const float *y,
                     const unsigned char *mask, double scale)
{
    double loss = 0.0;
    for (int i = 0; i < t; i++) {
        if (!mask[i]) continue;
        double r = (double)o[i] - (double)y[i];
        loss += r * r;
        if (backward) d_o[i] += (float)(2.0 * scale * r);
    }
    return loss * scale;
}

/* Huber: h(r) = r^2 for |r| <= delta_t, else delta_t (2 |r| - delta_t), so that it meets the
 * squared error at |r| = delta_t with the same slope; L = scale * sum_t mask_t h(o_t - y_t);
 * backward: do_t += scale mask_t h'(r) (2 r, or 2 delta_t sign r beyond the threshold) */
double pp_gnn_op_huber(int backward, int t, const float *o, float *d_o, const float *y,
                       const unsigned char *mask, const float *delta, double scale)
{
    double loss = 0.0;
    for (int i = 0; i < t; i++) {
        if (!mask[i]) continue;
        double r = (double)o[i] - (double)y[i], dl = (double)delta[i], a = fabs(r);
        if (a <= dl) {
            loss += r * r;
            if (backward) d_o[i] += (float)(2.0 * scale * r);
        } else {
            loss += dl * (2.0 * a - dl);
            if (backward) d_o[i] += (float)(2.0 * scale * dl * (r > 0 ? 1.0 : -1.0));
        }
    }
    return loss * scale;
}

/* ---- RNG: splitmix64 to seed xoshiro256** (Blackman & Vigna) ---- */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void pp_gnn_rng_seed(pp_gnn_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t pp_gnn_rng_next(pp_gnn_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double pp_gnn_rng_uniform(pp_gnn_rng *r) { return (double)(pp_gnn_rng_next(r) >> 11) * 0x1p-53; }

int pp_gnn_rng_below(pp_gnn_rng *r, int n)
{
    PP_ASSERT(n >= 1);
    uint64_t un = (uint64_t)n, lim = UINT64_MAX - UINT64_MAX % un;
    uint64_t v;
    do v = pp_gnn_rng_next(r);
    while (v >= lim);
    return (int)(v % un);
}
