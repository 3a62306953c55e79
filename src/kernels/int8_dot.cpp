#include "kernels/int8_dot.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "kernels/quant.h"

namespace nextn {

namespace {

// Byte position inside a pair of element e (0..31) of the pair's block `half` (0 or 1).
inline int pair_byte(int half, int e) { return 4 * (2 * (e / 4) + half) + e % 4; }

}  // namespace

void quantize_columns(const float* x, int64_t n, int64_t cols, QuantizedColumns& out) {
    const int64_t pairs = (cols + kQ8PairValues - 1) / kQ8PairValues;
    out.n = n;
    out.pairs = pairs;
    if (out.codes.size() < size_t(n * pairs * 64)) out.codes.resize(size_t(n * pairs * 64));
    if (out.scales.size() < size_t(n * pairs * 16)) out.scales.resize(size_t(n * pairs * 16));
    if (out.corr.size() < size_t(n * pairs * 16)) out.corr.resize(size_t(n * pairs * 16));
    for (int64_t j = 0; j < n; ++j) {
        const float* xj = x + j * cols;
        int8_t* codes = out.codes.data() + j * pairs * 64;   // [pairs, 64]
        float* scales = out.scales.data() + j * pairs * 16;  // [pairs, 16]
        int32_t* corr = out.corr.data() + j * pairs * 16;    // [pairs, 16]
        for (int64_t p = 0; p < pairs; ++p) {
            for (int half = 0; half < 2; ++half) {
                const int64_t start = p * 64 + half * 32;
                float amax = 0.0f;
                for (int e = 0; e < 32; ++e)
                    if (start + e < cols) amax = std::max(amax, std::fabs(xj[start + e]));
                const float d = amax / 127.0f;
                const float inv = d > 0.0f ? 1.0f / d : 0.0f;
                for (int e = 0; e < 32; ++e) {
                    const float v = start + e < cols ? xj[start + e] : 0.0f;
                    const float q = std::nearbyint(v * inv);  // |q| <= 127 up to rounding
                    codes[p * 64 + pair_byte(half, e)] =
                        int8_t(std::max(-127.0f, std::min(127.0f, q)));
                }
                for (int k = 0; k < 8; ++k) scales[p * 16 + 2 * k + half] = d;
            }
            for (int l = 0; l < 16; ++l) {
                int32_t sum = 0;
                for (int i = 0; i < 4; ++i) sum += codes[p * 64 + 4 * l + i];
                corr[p * 16 + l] = -128 * sum;
            }
        }
    }
}

WeightMatrix repack_q8_0_pairs(const WeightMatrix& w) {
    if (w.type != WType::Q8_0) fail("repack_q8_0_pairs: expected q8_0, got ", wtype_name(w.type));
    const int64_t blocks = w.cols / kQuantBlock;
    const int64_t pairs = (blocks + 1) / 2;
    const size_t row_bytes = size_t(pairs) * kQ8PairBytes;
    const size_t total = (size_t(w.rows) * row_bytes + 63) / 64 * 64;
    void* mem = std::aligned_alloc(64, total);
    if (!mem) fail("out of memory repacking a ", w.rows, "x", w.cols, " q8_0 weight");
    std::memset(mem, 0, total);
    WeightMatrix out;
    out.type = WType::Q8_0P;
    out.rows = w.rows;
    out.cols = w.cols;
    out.row_bytes = row_bytes;
    out.owner = std::shared_ptr<void>(mem, [](void* p) { std::free(p); });
    out.data = static_cast<const uint8_t*>(mem);
    auto* dst_base = static_cast<uint8_t*>(mem);
    for (int64_t r = 0; r < w.rows; ++r) {
        const auto* src = reinterpret_cast<const BlockQ8_0*>(w.data + size_t(r) * w.row_bytes);
        uint8_t* dst = dst_base + size_t(r) * row_bytes;
        for (int64_t p = 0; p < pairs; ++p) {
            uint8_t* pair = dst + p * kQ8PairBytes;
            for (int half = 0; half < 2; ++half) {
                const int64_t b = 2 * p + half;
                uint16_t d = 0;
                for (int e = 0; e < 32; ++e) {
                    const int8_t q = b < blocks ? src[b].qs[e] : int8_t(0);
                    pair[pair_byte(half, e)] = uint8_t(int(q) + 128);
                }
                if (b < blocks) d = src[b].d;
                std::memcpy(pair + 64 + 2 * half, &d, 2);
            }
        }
    }
    return out;
}

void q8_0p_row_f32(const WeightMatrix& w, int64_t row, float* out) {
    const uint8_t* src = w.data + size_t(row) * w.row_bytes;
    for (int64_t i = 0; i < w.cols; ++i) {
        const int64_t p = i / 64;
        const int half = int(i % 64) / 32, e = int(i % 32);
        const uint8_t* pair = src + p * int64_t(kQ8PairBytes);
        uint16_t d;
        std::memcpy(&d, pair + 64 + 2 * half, 2);
        out[i] = float(int(pair[pair_byte(half, e)]) - 128) * f16_to_f32(d);
    }
}

namespace ref {

void gemm_q8p_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                   int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + size_t(r) * w.row_bytes;
        for (int64_t j = 0; j < x.n; ++j) {
            const int8_t* xc = x.codes_of(j);
            const float* xs = x.scales_of(j);
            const int32_t* xk = x.corr_of(j);
            float acc[16] = {};
            for (int64_t p = 0; p < x.pairs; ++p) {
                const uint8_t* pair = row + p * int64_t(kQ8PairBytes);
                uint16_t dh[2];
                std::memcpy(dh, pair + 64, 4);
                const float dw[2] = {f16_to_f32(dh[0]), f16_to_f32(dh[1])};
                for (int l = 0; l < 16; ++l) {
                    int32_t isum = xk[p * 16 + l];
                    for (int i = 0; i < 4; ++i)
                        isum += int32_t(pair[4 * l + i]) * int32_t(xc[p * 64 + 4 * l + i]);
                    const float s = dw[l % 2] * xs[p * 16 + l];
                    acc[l] = std::fma(float(isum), s, acc[l]);
                }
            }
            // The AVX-512 hsum tree: halves of 16, of 8, then [0,1]+[2,3], then 0+1.
            float a[8], b[4];
            for (int i = 0; i < 8; ++i) a[i] = acc[i] + acc[i + 8];
            for (int i = 0; i < 4; ++i) b[i] = a[i] + a[i + 4];
            const float c0 = b[0] + b[2], c1 = b[1] + b[3];
            y[j * ldy + r] = c0 + c1;
        }
    }
}

}  // namespace ref

}  // namespace nextn
