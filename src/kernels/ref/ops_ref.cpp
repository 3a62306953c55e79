// Scalar reference norms and activations. Sums in index order; no FMA contraction.
#pragma GCC optimize("fp-contract=off")
#include <cmath>

#include "core/half.h"
#include "kernels/key_tiles.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"

namespace nextn::ref {

void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y) {
    for (int64_t i = 0; i < n_rows; ++i) {
        const float* xi = x + i * d;
        float* yi = y + i * d;
        float sum = 0.0f;
        for (int64_t c = 0; c < d; ++c) sum += xi[c] * xi[c];
        const float scale = 1.0f / std::sqrt(sum / float(d) + eps);
        for (int64_t c = 0; c < d; ++c) yi[c] = xi[c] * scale * w[c];
    }
}

void l2norm(const float* x, int64_t n_rows, int64_t d, float eps, float* y) {
    for (int64_t i = 0; i < n_rows; ++i) {
        const float* xi = x + i * d;
        float* yi = y + i * d;
        float sum = 0.0f;
        for (int64_t c = 0; c < d; ++c) sum += xi[c] * xi[c];
        const float scale = 1.0f / std::sqrt(sum + eps);
        for (int64_t c = 0; c < d; ++c) yi[c] = xi[c] * scale;
    }
}

void sigmoid(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void silu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void swiglu(const float* gate, const float* up, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void softmax(float* x, int64_t n_rows, int64_t d) {
    for (int64_t i = 0; i < n_rows; ++i) {
        float* xi = x + i * d;
        float mx = xi[0];
        for (int64_t c = 1; c < d; ++c) mx = xi[c] > mx ? xi[c] : mx;
        float sum = 0.0f;
        for (int64_t c = 0; c < d; ++c) {
            xi[c] = std::exp(xi[c] - mx);
            sum += xi[c];
        }
        const float inv = 1.0f / sum;
        for (int64_t c = 0; c < d; ++c) xi[c] *= inv;
    }
}

namespace {

// key_scores over Q8_0 keys: each query row rounded to Q8_0 a block at a time; a score takes, per
// block in order, one fused multiply-add of the block's integer dot product (exact) by the
// product of the two scales.
void q8_0_key_scores(const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                     float* out, int64_t ldo) {
    const size_t tile_bytes = key_tile_bytes(WType::Q8_0, d);
    for (int64_t r = 0; r < R; ++r) {
        for (int64_t pos = 0; pos < n; ++pos) out[r * ldo + pos] = 0.0f;
        for (int64_t b = 0; b < d / kQuantBlock; ++b) {
            BlockQ8_0 query;
            quantize_row_q8_0(q + r * d + b * kQuantBlock, kQuantBlock, &query);
            const float scale = f16_to_f32(query.d);
            for (int64_t pos = 0; pos < n; ++pos) {
                const uint8_t* tile = tiles + size_t(pos / kKeyTile) * tile_bytes;
                const int64_t lane = pos % kKeyTile;
                int32_t dot = 0;
                for (int64_t j = 0; j < kQuantBlock; ++j)
                    dot += q8_0_key_code(tile, lane, b * kQuantBlock + j) * query.qs[j];
                const float key_scale = f16_to_f32(q8_0_key_scale(tile, lane, b * kQuantBlock));
                out[r * ldo + pos] = std::fma(float(dot), key_scale * scale, out[r * ldo + pos]);
            }
        }
    }
}

}  // namespace

void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo) {
    if (type == WType::Q8_0) return q8_0_key_scores(tiles, n, q, R, d, out, ldo);
    const size_t tile_bytes = key_tile_bytes(type, d);
    for (int64_t r = 0; r < R; ++r)
        for (int64_t pos = 0; pos < n; ++pos) {
            const uint8_t* tile = tiles + size_t(pos / kKeyTile) * tile_bytes;
            float acc = 0.0f;
            for (int64_t e = 0; e < d; ++e)
                acc = std::fma(q[r * d + e], key_in_tile(type, tile, pos % kKeyTile, e), acc);
            out[r * ldo + pos] = acc;
        }
}

namespace {

// weighted_rows over value rows whose value e at position pos is value(pos, e), an f32 (exact:
// a half widened, or a Q8_0 block's d * code).
template <class Value>
void weighted_rows_of(const float* p, int64_t ldp, int64_t G, int64_t n, int64_t d, float* out,
                      bool accumulate, Value value) {
    for (int64_t g = 0; g < G; ++g) {
        float* o = out + g * d;
        if (!accumulate)
            for (int64_t e = 0; e < d; ++e) o[e] = 0.0f;
        for (int64_t pos = 0; pos < n; ++pos) {
            const float w = p[g * ldp + pos];
            for (int64_t e = 0; e < d; ++e) o[e] = std::fma(w, value(pos, e), o[e]);
        }
    }
}

}  // namespace

void weighted_rows(const float* p, int64_t ldp, int64_t G, const float* v, int64_t ldv, int64_t n,
                   int64_t d, float* out, bool accumulate) {
    weighted_rows_of(p, ldp, G, n, d, out, accumulate,
                     [&](int64_t pos, int64_t e) { return v[pos * ldv + e]; });
}

void weighted_rows_f16(const float* p, int64_t ldp, int64_t G, const uint16_t* v, int64_t ldv,
                       int64_t n, int64_t d, float* out, bool accumulate) {
    weighted_rows_of(p, ldp, G, n, d, out, accumulate,
                     [&](int64_t pos, int64_t e) { return f16_to_f32(v[pos * ldv + e]); });
}

void weighted_rows_q8_0(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv_bytes,
                        int64_t n, int64_t d, float* out, bool accumulate) {
    weighted_rows_of(p, ldp, G, n, d, out, accumulate, [&](int64_t pos, int64_t e) {
        const BlockQ8_0& b =
            reinterpret_cast<const BlockQ8_0*>(v + pos * ldv_bytes)[e / kQuantBlock];
        return float(b.qs[e % kQuantBlock]) * f16_to_f32(b.d);
    });
}

void causal_conv(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                 float* out, int64_t ld_out) {
    for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < C; ++c) {
            float acc = 0.0f;
            for (int j = 0; j < K; ++j) acc += w[j * ld + c] * x[(t + j) * ld + c];
            out[t * ld_out + c] = acc;
        }
}

void rope_neox(float* x, int64_t n, int64_t stride, int64_t half, const float* cos, const float* sin) {
    for (int64_t h = 0; h < n; ++h) {
        float* xh = x + h * stride;
        for (int64_t i = 0; i < half; ++i) {
            const float a = xh[i], b = xh[i + half];
            xh[i] = a * cos[i] - b * sin[i];
            xh[i + half] = b * cos[i] + a * sin[i];
        }
    }
}

}  // namespace nextn::ref
