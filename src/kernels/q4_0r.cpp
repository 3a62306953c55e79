#pragma GCC optimize("fp-contract=off")  // the reference rounds dw * dx on its own, as the kernel does
#include "kernels/q4_0r.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/int8_dot.h"
#include "kernels/quant.h"

namespace nextn {

WeightMatrix allocate_q4_0r(int64_t rows, int64_t cols, const std::string& what) {
    WeightMatrix w;
    w.type = WType::Q4_0R;
    w.rows = rows;
    w.cols = cols;
    const size_t group_bytes = q4_0r_group_bytes(cols);
    if (rows <= 0 || group_bytes == 0) fail("Q4_0R matrix ", what, ": bad shape [", rows, ", ", cols, "]");
    w.row_bytes = group_bytes / kQ4_0RGroupRows;
    const std::string named = what + " (" + wtype_name(w.type) + ")";
    require_weight_memory(w.nbytes(), named);
    w.owner = allocate_weight_memory(w.nbytes(), named, /*zeroed=*/false);
    w.data = static_cast<const uint8_t*>(w.owner.get());
    auto* base = static_cast<uint8_t*>(w.owner.get());
    const int64_t groups = q4_0r_groups(rows);
    if (rows % kQ4_0RGroupRows) std::memset(base + size_t(groups - 1) * group_bytes, 0, group_bytes);
    const size_t scales_end = q4_0r_scales_offset(cols) + size_t(cols / kQuantBlock) * 32;
    if (scales_end < group_bytes)  // an odd number of blocks: 32 bytes after each group's scales
        for (int64_t g = 0; g < groups; ++g) std::memset(base + size_t(g) * group_bytes + scales_end, 0, group_bytes - scales_end);
    return w;
}

WeightMatrix repack_q4_0_as_q4_0r(const WeightMatrix& q4_0, ThreadPool* pool) {
    if (q4_0.type != WType::Q4_0) fail("repack_q4_0_as_q4_0r: a ", wtype_name(q4_0.type), " matrix");
    WeightMatrix w = allocate_q4_0r(q4_0.rows, q4_0.cols,
                                    std::to_string(q4_0.rows) + "x" + std::to_string(q4_0.cols) + " weight");
    auto* base = const_cast<uint8_t*>(w.data);
    // Whole groups per task, so each group's lines are written by one thread.
    run_on(pool, q4_0r_groups(q4_0.rows), [&](int64_t g0, int64_t g1) {
        for (int64_t r = g0 * kQ4_0RGroupRows; r < std::min(q4_0.rows, g1 * kQ4_0RGroupRows); ++r)
            q4_0r_store_row(q4_0.data + size_t(r) * q4_0.row_bytes, q4_0.cols, r, base);
    });
    return w;
}

void q4_0r_store_row(const uint8_t* q4_0_row, int64_t cols, int64_t row, uint8_t* base) {
    const size_t group_bytes = q4_0r_group_bytes(cols);
    uint8_t* group = base + size_t(row / kQ4_0RGroupRows) * group_bytes;
    const int lane = int(row % kQ4_0RGroupRows);
    const auto* blocks = reinterpret_cast<const BlockQ4_0*>(q4_0_row);
    for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
        for (int i = 0; i < 4; ++i) std::memcpy(group + b * 256 + i * 64 + 4 * lane, blocks[b].qs + 4 * i, 4);
        std::memcpy(group + q4_0r_scales_offset(cols) + size_t(b * 16 + lane) * 2, &blocks[b].d, 2);
    }
}

namespace {

// Row r's code of element e (0..31) of block b, and its scale.
struct GroupRow {
    const uint8_t* group;
    int lane;
    size_t scales;
    int code(int64_t b, int e) const {
        const uint8_t byte = group[b * 256 + (e % 16 / 4) * 64 + 4 * lane + e % 4];
        return e < 16 ? byte & 15 : byte >> 4;
    }
    float d(int64_t b) const {
        uint16_t h;
        std::memcpy(&h, group + scales + size_t(b * 16 + lane) * 2, 2);
        return f16_to_f32(h);
    }
};

GroupRow group_row(const WeightMatrix& w, int64_t row) {
    return {w.data + size_t(row / kQ4_0RGroupRows) * q4_0r_group_bytes(w.cols),
            int(row % kQ4_0RGroupRows), q4_0r_scales_offset(w.cols)};
}

}  // namespace

void q4_0r_row_f32(const WeightMatrix& w, int64_t row, float* out) {
    const GroupRow g = group_row(w, row);
    for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
        const float d = g.d(b);
        for (int e = 0; e < 32; ++e) out[b * 32 + e] = float(g.code(b, e) - 8) * d;  // Q4_0's decode
    }
}

namespace ref {

void gemm_q4_0r_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                     int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
        const GroupRow g = group_row(w, r);
        for (int64_t j = 0; j < x.n; ++j) {
            const int8_t* xc = x.codes_of(j);  // [chunks, 8 steps, 16 lanes, 4]
            float acc = 0.0f;
            for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
                const int8_t* xb = xc + (b / kI8ChunkBlocks) * kI8ChunkValues + 4 * (b % kI8ChunkBlocks);
                int32_t isum = -8 * x.sums_of(j)[b];
                for (int e = 0; e < 32; ++e) isum += g.code(b, e) * int32_t(xb[(e / 4) * 64 + e % 4]);
                acc = std::fma(float(isum), g.d(b) * x.scales_of(j)[b], acc);
            }
            y[j * ldy + r] = acc;
        }
    }
}

}  // namespace ref

}  // namespace nextn
