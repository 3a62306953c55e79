// f32-activation matmul on NEON (kernels.h gemm_rows). F32, BF16 and F16 rows are widened to f32
// as they are read; the block types (Q8_0, Q4_0, Q4_1, read here only with --f32-activations)
// are decoded a row at a time into a per-thread buffer first.
//
// Each output element: 16 running sums, lane l taking the products of values k = l (mod 16) by
// fused multiply-adds in k order over the row's whole 16-value stretches, then the reference's
// lane_tree_sum, then the tail values (cols % 16 of them) by fused multiply-adds in order. That
// depends on nothing but the row and the column, so a batch of any width, in any column group
// and on any thread, gives every element the bits it has alone.
#include <arm_neon.h>

#include <cmath>

#include "core/half.h"
#include "kernels/arm/arm_kernels.h"
#include "kernels/arm/column_passes.h"
#include "kernels/ref/ref.h"

namespace nextn::arm::neon {

namespace {

// Columns that share one read of a weight row.
constexpr int kMaxGroup = 4;

struct ReadF32 {
    static float32x4_t four(const void* row, int64_t k) {
        return vld1q_f32(static_cast<const float*>(row) + k);
    }
    static float one(const void* row, int64_t k) { return static_cast<const float*>(row)[k]; }
};

struct ReadBF16 {  // bf16 is the top half of an f32
    static float32x4_t four(const void* row, int64_t k) {
        const uint16x4_t h = vld1_u16(static_cast<const uint16_t*>(row) + k);
        return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
    }
    static float one(const void* row, int64_t k) {
        return bf16_to_f32(static_cast<const uint16_t*>(row)[k]);
    }
};

struct ReadF16 {  // IEEE half to f32: exact
    static float32x4_t four(const void* row, int64_t k) {
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(row) + k)));
    }
    static float one(const void* row, int64_t k) {
        return f16_to_f32(static_cast<const uint16_t*>(row)[k]);
    }
};

template <class Read, int G>
void row_times_columns(const void* row, int64_t cols, const float* x, int64_t j0, float* y,
                       int64_t ldy, int64_t r) {
    float32x4_t acc[G][4];  // [columns, 16 lanes]
    for (int j = 0; j < G; ++j)
        for (int q = 0; q < 4; ++q) acc[j][q] = vdupq_n_f32(0.0f);
    const int64_t whole = cols / 16 * 16;
    for (int64_t k = 0; k < whole; k += 16) {
        float32x4_t wv[4];
        for (int q = 0; q < 4; ++q) wv[q] = Read::four(row, k + 4 * q);
        for (int j = 0; j < G; ++j) {
            const float* xj = x + (j0 + j) * cols + k;
            for (int q = 0; q < 4; ++q)
                acc[j][q] = vfmaq_f32(acc[j][q], wv[q], vld1q_f32(xj + 4 * q));
        }
    }
    for (int j = 0; j < G; ++j) {
        float lanes[16];
        for (int q = 0; q < 4; ++q) vst1q_f32(lanes + 4 * q, acc[j][q]);
        float sum = ref::lane_tree_sum(lanes);
        const float* xj = x + (j0 + j) * cols;
        for (int64_t k = whole; k < cols; ++k) sum = std::fma(Read::one(row, k), xj[k], sum);
        y[(j0 + j) * ldy + r] = sum;
    }
}

template <class Read>
void row_times_batch(const void* row, int64_t cols, const float* x, int64_t n, float* y,
                     int64_t ldy, int64_t r) {
    for_column_passes<kMaxGroup>(
        n, [&]<int G>(int64_t j0) { row_times_columns<Read, G>(row, cols, x, j0, y, ldy, r); });
}

}  // namespace

void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
               int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + size_t(r) * w.row_bytes;
        switch (w.type) {
            case WType::F32:
                row_times_batch<ReadF32>(row, w.cols, x, n, y, ldy, r);
                break;
            case WType::BF16:
                row_times_batch<ReadBF16>(row, w.cols, x, n, y, ldy, r);
                break;
            case WType::F16:
                row_times_batch<ReadF16>(row, w.cols, x, n, y, ldy, r);
                break;
            default: {  // block types: the row's exact f32 values first
                struct Row;
                float* values = ref::thread_buffer<float, Row>(size_t(w.cols));  // [cols]
                weight_row_f32(w, r, values);
                row_times_batch<ReadF32>(values, w.cols, x, n, y, ldy, r);
            }
        }
    }
}

}  // namespace nextn::arm::neon
