#pragma GCC optimize("fp-contract=off")  // the reference rounds each product and sum on its own
#include "kernels/int8_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "formats/dequant.h"
#include "kernels/kernels.h"
#include "kernels/row_groups.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"

namespace nextn {

namespace {

// Where block b's scale (plane 0) or offset (plane 1) sits in a row.
size_t scale_at(WType t, int64_t cols, int plane, int64_t b) {
    return int8_dot_plane_offset(t, int8_dot_chunks(cols), plane) + size_t(b) * int8_dot_scale_bytes(t);
}

float load_scale(const uint8_t* row, WType t, int64_t cols, int plane, int64_t b) {
    const uint8_t* p = row + scale_at(t, cols, plane, b);
    if (int8_dot_scale_bytes(t) == 4) {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return f16_to_f32(h);
}

// Byte offset inside a Q8_0X chunk of element e (0..31) of block l, and for the 4-bit types the
// byte plus which nibble (0 low, 1 high).
inline int q8_byte(int l, int e) { return (e / 4) * 64 + 4 * l + e % 4; }
inline int q4_byte(int l, int e) { return (e / 8) * 64 + 4 * l + e % 4; }
inline int q4_nibble(int e) { return (e / 4) % 2; }
// Q6_KX: the byte (after the 256 low-nibble bytes) and bit position of element e's high 2 bits.
inline int q6_high_byte(int l, int e) { return 256 + (e / 16) * 64 + 4 * l + e % 4; }
inline int q6_high_shift(int e) { return 2 * ((e / 4) % 4); }
// Q6_KX: element e's code (0..63) and its sub-block scale (plane 1: 16 first-half scales, then 16
// second-half ones per chunk).
int q6_code(const uint8_t* chunk, int l, int e) {
    const int low = (chunk[q4_byte(l, e)] >> (4 * q4_nibble(e))) & 15;
    return low | ((chunk[q6_high_byte(l, e)] >> q6_high_shift(e)) & 3) << 4;
}
size_t q6_sub_scale_at(int64_t cols, int64_t b, int half) {
    return int8_dot_plane_offset(WType::Q6_KX, int8_dot_chunks(cols), 1) +
           size_t((b / kI8ChunkBlocks) * 32 + half * 16 + b % kI8ChunkBlocks);
}

// One source block's codes, and its f16 scale (and min).
struct SourceBlock {
    const uint8_t* p;
    WType type;
    void codes(int* out) const {  // out[32]: element e's code
        if (type == WType::Q8_0) {
            const int8_t* qs = reinterpret_cast<const BlockQ8_0*>(p)->qs;
            for (int e = 0; e < 32; ++e) out[e] = qs[e];
            return;
        }
        const uint8_t* qs = type == WType::Q4_0 ? reinterpret_cast<const BlockQ4_0*>(p)->qs
                                                : reinterpret_cast<const BlockQ4_1*>(p)->qs;
        for (int e = 0; e < 16; ++e) {
            out[e] = qs[e] & 15;
            out[e + 16] = qs[e] >> 4;
        }
    }
    uint16_t d() const {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
    }
    uint16_t m() const {
        uint16_t v;
        std::memcpy(&v, p + 2, 2);
        return v;
    }
};

size_t source_block_bytes(WType t) {
    switch (t) {
        case WType::Q8_0: return sizeof(BlockQ8_0);
        case WType::Q4_0: return sizeof(BlockQ4_0);
        default: return sizeof(BlockQ4_1);
    }
}

}  // namespace

bool is_int8_dot_type(WType t) {
    return t == WType::Q8_0X || t == WType::Q4_0X || t == WType::Q4_1X || t == WType::Q4_1FX ||
           t == WType::Q8_1FX || t == WType::Q6_KX || is_row_group_type(t);
}

WType int8_dot_type_for(WType t, RowGroupLayouts groups) {
    switch (t) {
        case WType::Q8_0: return groups.q8_0 ? WType::Q8_0R : WType::Q8_0X;
        case WType::Q4_0: return groups.q4_0 ? WType::Q4_0R : WType::Q4_0X;
        case WType::Q4_1: return WType::Q4_1X;
        default: return t;
    }
}

WType int8_dot_source_type(WType t) {
    switch (t) {
        case WType::Q8_0X:
        case WType::Q8_0R: return WType::Q8_0;
        case WType::Q4_0X:
        case WType::Q4_0R: return WType::Q4_0;
        case WType::Q4_1X: return WType::Q4_1;
        default: return t;
    }
}

WType int8_dot_block_source(WType t, const char* who) {
    const WType source = int8_dot_source_type(t);
    if (source == t) fail(who, ": ", wtype_name(t), " is only made from a checkpoint's codes");
    return source;
}

size_t int8_dot_row_bytes(WType t, int64_t cols) {
    if (cols <= 0 || cols % kQuantBlock || !is_int8_dot_type(t)) return 0;
    if (is_row_group_type(t)) return row_group_bytes(t, cols) / kRowGroupRows;
    const int64_t chunks = int8_dot_chunks(cols);
    const size_t bytes = int8_dot_plane_offset(t, chunks, int8_dot_scale_planes(t));
    return (bytes + 63) / 64 * 64;
}

namespace {

// A chunked matrix of `type` [rows, cols], not zeroed: each repack zeroes a row before it fills
// it (padding blocks; nibbles are or-ed in), so every page is first touched by the worker that
// fills it. `what` names it in the memory errors. Returns the writable base of its rows.
uint8_t* allocate_chunked(WType type, int64_t rows, int64_t cols, const std::string& what,
                          WeightMatrix& out) {
    out = WeightMatrix{};
    out.type = type;
    out.rows = rows;
    out.cols = cols;
    out.row_bytes = int8_dot_row_bytes(type, cols);
    if (out.row_bytes == 0) fail("int8-dot repack of ", what, ": ", cols, " columns are not whole blocks");
    const std::string named = what + " (" + wtype_name(type) + ")";
    require_weight_memory(out.nbytes(), named);
    out.owner = allocate_weight_memory(out.nbytes(), named, /*zeroed=*/false);
    out.data = static_cast<const uint8_t*>(out.owner.get());
    return static_cast<uint8_t*>(out.owner.get());
}

}  // namespace

void repack_row_for_int8_dot(const uint8_t* src, WType source, int64_t cols, uint8_t* dst) {
    const WType type = int8_dot_type_for(source);
    std::memset(dst, 0, int8_dot_row_bytes(type, cols));  // padding blocks; nibbles are or-ed in
    const size_t block_bytes = source_block_bytes(source);
    const int64_t chunk_bytes = int8_dot_chunk_code_bytes(type);
    for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
        const SourceBlock blk{src + size_t(b) * block_bytes, source};
        const int64_t chunk = b / kI8ChunkBlocks;
        const int l = int(b % kI8ChunkBlocks);
        uint8_t* codes = dst + chunk * chunk_bytes;
        int block_codes[32];  // the block's codes, decoded once (not per element and type)
        blk.codes(block_codes);
        if (type == WType::Q8_0X) {
            for (int e = 0; e < 32; ++e) codes[q8_byte(l, e)] = uint8_t(block_codes[e] + 128);
        } else {  // each byte holds element e (low nibble) and e + 4 (high): q4_byte, q4_nibble
            for (int e = 0; e < 32; e += 8)
                for (int j = 0; j < 4; ++j)
                    codes[q4_byte(l, e + j)] =
                        uint8_t(block_codes[e + j] | (block_codes[e + j + 4] << 4));
        }
        const uint16_t d = blk.d();
        std::memcpy(dst + scale_at(type, cols, 0, b), &d, 2);
        if (type == WType::Q4_1X) {
            const uint16_t m = blk.m();
            std::memcpy(dst + scale_at(type, cols, 1, b), &m, 2);
        }
    }
}

WeightMatrix repack_for_int8_dot(const WeightMatrix& w, ThreadPool* pool) {
    const WType type = int8_dot_type_for(w.type);
    if (type == w.type) return w;
    return repack_for_int8_dot(w, type, pool);
}

WeightMatrix repack_for_int8_dot(const WeightMatrix& w, WType type, ThreadPool* pool) {
    if (!is_int8_dot_type(type) || int8_dot_source_type(type) != w.type || type == w.type)
        fail("repack_for_int8_dot: a ", wtype_name(w.type), " matrix cannot become ", wtype_name(type));
    if (is_row_group_type(type)) return repack_as_row_groups(w, type, pool);
    WeightMatrix out;
    uint8_t* base = allocate_chunked(type, w.rows, w.cols,
                                     std::to_string(w.rows) + "x" + std::to_string(w.cols) + " weight",
                                     out);
    auto rows = [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
            repack_row_for_int8_dot(w.data + size_t(r) * w.row_bytes, w.type, w.cols,
                                    base + size_t(r) * out.row_bytes);
    };
    run_on(pool, w.rows, rows);
    return out;
}

bool repack_affine_for_int8_dot(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                                ThreadPool* pool) {
    const int bits = affine_code_bits(t, rows, cols);
    if (bits == 0) return false;
    const WType type = bits == 4 ? WType::Q4_1FX : WType::Q8_1FX;
    uint8_t* base = allocate_chunked(type, rows, cols, t.name, out);
    const size_t row_bytes = out.row_bytes;
    // Per-thread scratch, allocated here: nothing inside the pool allocates or throws.
    struct Scratch {
        std::vector<uint8_t> codes;  // [cols]
        std::vector<float> d, m;     // [cols / 32]
    };
    const int n_threads = pool ? pool->size() : 1;
    std::vector<Scratch> scratch(static_cast<size_t>(n_threads));
    for (Scratch& s : scratch) {
        s.codes.resize(static_cast<size_t>(cols));
        s.d.resize(static_cast<size_t>(cols / 32));
        s.m.resize(s.d.size());
    }
    auto work = [&](int thread, int64_t begin, int64_t end) {
        Scratch& s = scratch[size_t(thread)];
        for (int64_t r = begin; r < end; ++r) {
            affine_row(t, r, cols, s.codes.data(), s.d.data(), s.m.data());
            uint8_t* dst = base + size_t(r) * row_bytes;
            std::memset(dst, 0, row_bytes);  // padding blocks; nibbles are or-ed in
            for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
                uint8_t* chunk = dst + (b / kI8ChunkBlocks) * int8_dot_chunk_code_bytes(type);
                const int l = int(b % kI8ChunkBlocks);
                for (int e = 0; e < 32; ++e) {
                    const uint8_t code = s.codes[size_t(b * 32 + e)];
                    if (type == WType::Q8_1FX)
                        chunk[q8_byte(l, e)] = code;
                    else
                        chunk[q4_byte(l, e)] |= uint8_t(code << (4 * q4_nibble(e)));
                }
                std::memcpy(dst + scale_at(type, cols, 0, b), &s.d[size_t(b)], 4);
                std::memcpy(dst + scale_at(type, cols, 1, b), &s.m[size_t(b)], 4);
            }
        }
    };
    run_indexed_on(pool, rows, work);
    return true;
}

bool repack_q6_k_for_int8_dot(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& out,
                              ThreadPool* pool) {
    constexpr int64_t kSuper = 256, kSuperBytes = 210;
    if (t.dtype != DType::Q6_K || cols % kSuper || rows * cols != t.numel() ||
        t.nbytes != size_t(rows * cols / kSuper * kSuperBytes))
        return false;
    const WType type = WType::Q6_KX;
    uint8_t* base = allocate_chunked(type, rows, cols, t.name, out);
    const size_t row_bytes = out.row_bytes;
    auto work = [&](int64_t begin, int64_t end) {
        uint8_t codes[kSuper];
        int8_t scales[16];
        uint16_t d;
        for (int64_t r = begin; r < end; ++r) {
            uint8_t* dst = base + size_t(r) * row_bytes;
            std::memset(dst, 0, row_bytes);  // codes are or-ed in
            for (int64_t sb = 0; sb < cols / kSuper; ++sb) {
                q6_k_block_codes(t.data + size_t((r * cols / kSuper + sb) * kSuperBytes), codes,
                                 scales, &d);
                for (int64_t b = sb * 8; b < sb * 8 + 8; ++b) {  // the super-block's 8 blocks of 32
                    uint8_t* chunk = dst + (b / kI8ChunkBlocks) * int8_dot_chunk_code_bytes(type);
                    const int l = int(b % kI8ChunkBlocks);
                    const uint8_t* q = codes + (b - sb * 8) * 32;
                    for (int e = 0; e < 32; ++e) {
                        chunk[q4_byte(l, e)] |= uint8_t((q[e] & 15) << (4 * q4_nibble(e)));
                        chunk[q6_high_byte(l, e)] |= uint8_t((q[e] >> 4) << q6_high_shift(e));
                    }
                    std::memcpy(dst + scale_at(type, cols, 0, b), &d, 2);
                    for (int half = 0; half < 2; ++half)
                        std::memcpy(dst + q6_sub_scale_at(cols, b, half),
                                    &scales[(b - sb * 8) * 2 + half], 1);
                }
            }
        }
    };
    run_on(pool, rows, work);
    return true;
}

void int8_dot_row_f32(const WeightMatrix& w, int64_t row, float* out) {
    if (is_row_group_type(w.type)) return row_groups_row_f32(w, row, out);
    const uint8_t* src = w.data + size_t(row) * w.row_bytes;
    const int64_t chunk_bytes = int8_dot_chunk_code_bytes(w.type);
    for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
        const uint8_t* codes = src + (b / kI8ChunkBlocks) * chunk_bytes;
        const int l = int(b % kI8ChunkBlocks);
        const float d = load_scale(src, w.type, w.cols, 0, b);
        const float m = int8_dot_affine(w.type) ? load_scale(src, w.type, w.cols, 1, b) : 0.0f;
        for (int e = 0; e < 32; ++e) {
            float v;
            if (w.type == WType::Q6_KX) {  // as block_q6_k: (d * sc) * (q - 32)
                const auto sc = int8_t(src[q6_sub_scale_at(w.cols, b, e / 16)]);
                v = d * float(sc) * float(q6_code(codes, l, e) - 32);
            } else if (w.type == WType::Q8_0X) {
                v = float(int(codes[q8_byte(l, e)]) - 128) * d;
            } else if (w.type == WType::Q8_1FX) {
                const float prod = float(codes[q8_byte(l, e)]) * d;
                v = prod + m;
            } else {
                const int code = (codes[q4_byte(l, e)] >> (4 * q4_nibble(e))) & 15;
                // The source decoders: (code - 8) * d for Q4_0; code * d + m, two roundings, for
                // Q4_1 and the affine 4-bit types.
                if (w.type == WType::Q4_0X) {
                    v = float(code - 8) * d;
                } else {
                    const float prod = float(code) * d;
                    v = prod + m;
                }
            }
            out[b * kQuantBlock + e] = v;
        }
    }
}

// Buffers grow to at least this many columns at once: a verify batch (and an MoE expert's
// share of one) is up to 16 columns, and growing one column at a time as wider batches first
// appear would reallocate inside the decode loop.
constexpr int64_t kMinColumnsHeld = 16;

void resize_columns(int64_t n, int64_t cols, QuantizedColumns& out) {
    out.n = n;
    out.chunks = int8_dot_chunks(cols);
    // codes and every per-block plane always hold the same number of columns.
    const int64_t per_column = out.chunks * kI8ChunkBlocks;
    if (per_column == 0 || int64_t(out.scales.size()) / per_column >= n) return;
    const int64_t grow = std::max(n, kMinColumnsHeld);
    out.codes.resize(size_t(grow * out.chunks * kI8ChunkValues));
    out.scales.resize(size_t(grow * out.chunks * kI8ChunkBlocks));
    out.sums.resize(out.scales.size());
    out.half_sums.resize(out.scales.size());
    out.half_pairs.resize(out.scales.size());
    out.starts8.resize(out.scales.size());
    out.starts128.resize(out.scales.size());
    out.q6_starts_first.resize(out.scales.size());
    out.q6_starts_second.resize(out.scales.size());
    out.float_sums.resize(out.scales.size());
}

void quantize_activations(const KernelTable& k, const float* x, int64_t n, int64_t cols,
                          QuantizedColumns& out, ThreadPool& pool) {
    resize_columns(n, cols, out);
    // A column costs about as much as one weight row; split only when there are many.
    if (n < 8) {
        k.quantize_columns(x, cols, out, 0, n);
        return;
    }
    pool.run(n, [&](int64_t j0, int64_t j1) { k.quantize_columns(x, cols, out, j0, j1); });
}

namespace ref {

void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1) {
    quantize_columns_with(x, cols, out, j0, j1, [](const float* p, int64_t left, int8_t* q, int32_t* sum,
                                                   int32_t* half) {
        float amax = 0.0f;
        bool finite = true;
        for (int e = 0; e < 32 && e < left; ++e) {
            finite = finite && std::isfinite(p[e]);
            amax = std::max(amax, std::fabs(p[e]));
        }
        if (!finite) return std::numeric_limits<float>::quiet_NaN();
        const float d = amax / 127.0f;
        const float inv = int8_inverse_scale(d);
        for (int e = 0; e < 32; ++e) {
            const float v = e < left ? p[e] : 0.0f;
            const float r = std::nearbyint(v * inv);  // |r| <= 127 up to rounding
            q[e] = int8_t(std::max(-127.0f, std::min(127.0f, r)));
            *sum += q[e];
            if (e < 16) *half += q[e];
        }
        return d;
    });
}

void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    if (is_row_group_type(w.type)) return gemm_row_groups(w, x, y, ldy, r0, r1);
    const int64_t chunk_bytes = int8_dot_chunk_code_bytes(w.type);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + size_t(r) * w.row_bytes;
        for (int64_t j = 0; j < x.n; ++j) {
            const int8_t* xc = x.codes_of(j);
            float acc[16] = {};
            for (int64_t c = 0; c < x.chunks; ++c) {
                const uint8_t* codes = row + c * chunk_bytes;
                const int8_t* xcodes = xc + c * kI8ChunkValues;
                for (int l = 0; l < 16; ++l) {
                    int32_t half_isum[2] = {0, 0};  // steps 0..3, 4..7
                    for (int s = 0; s < kI8Steps; ++s)
                        for (int i = 0; i < 4; ++i) {
                            int32_t u;
                            if (int8_dot_eight_bit(w.type))
                                u = codes[s * 64 + 4 * l + i];
                            else if (w.type == WType::Q6_KX)
                                u = q6_code(codes, l, 4 * s + i);
                            else
                                u = (codes[(s / 2) * 64 + 4 * l + i] >> (4 * (s % 2))) & 15;
                            half_isum[s / 4] += u * int32_t(xcodes[s * 64 + 4 * l + i]);
                        }
                    const int32_t isum = half_isum[0] + half_isum[1];
                    const int64_t b = c * kI8ChunkBlocks + l;
                    const int32_t xsum = x.sums_of(j)[b];
                    const float dx = x.scales_of(j)[b];
                    const float dw = load_scale(row, w.type, w.cols, 0, b);
                    if (w.type == WType::Q6_KX) {
                        const int32_t xhalf = x.half_sums_of(j)[b];
                        const int32_t sc_a = int8_t(row[q6_sub_scale_at(w.cols, b, 0)]);
                        const int32_t sc_b = int8_t(row[q6_sub_scale_at(w.cols, b, 1)]);
                        const int32_t exact = sc_a * (half_isum[0] - 32 * xhalf) +
                                              sc_b * (half_isum[1] - 32 * (xsum - xhalf));
                        acc[l] = std::fma(float(exact), dw * dx, acc[l]);
                    } else if (w.type == WType::Q8_0X) {
                        acc[l] = std::fma(float(isum - 128 * xsum), dw * dx, acc[l]);
                    } else if (w.type == WType::Q4_0X) {
                        acc[l] = std::fma(float(isum - 8 * xsum), dw * dx, acc[l]);
                    } else {
                        const float dm = load_scale(row, w.type, w.cols, 1, b);
                        acc[l] = std::fma(float(isum), dw * dx, acc[l]);
                        acc[l] = std::fma(float(xsum), dm * dx, acc[l]);
                    }
                }
            }
            y[j * ldy + r] = lane_tree_sum(acc);
        }
    }
}

}  // namespace ref

}  // namespace nextn
