#include "formats/dequant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"
#include "formats/ggml_types.h"

namespace nextn {

namespace {

uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

float load_f16(const uint8_t* p) { return f16_to_f32(load_u16(p)); }

// n bf16 values widened to f32 bit patterns (bf16_to_f32's shift): the bulk of loading a bf16
// checkpoint with --quant. Fixed 16-value steps with restrict pointers are what -O2's cheap
// vectoriser takes (an open-ended loop stayed scalar).
void widen_bf16(const uint8_t* __restrict src, uint32_t* __restrict dst, int64_t n) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16)
        for (int k = 0; k < 16; ++k) dst[j + k] = uint32_t(load_u16(src + 2 * (j + k))) << 16;
    for (; j < n; ++j) dst[j] = uint32_t(load_u16(src + 2 * j)) << 16;
}

// ---- ggml blocks. Each decoder reads one block and writes block_size floats, evaluating the
// same float expressions, in the same order, as ggml's dequantize_row_* so results are bitwise
// identical (no FMA contraction: this file is built without -mfma).

// Q8_0: f16 d, int8 q[32]; y = q * d.
void block_q8_0(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    const int8_t* q = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < 32; ++j) y[j] = float(q[j]) * d;
}

// Q4_0: f16 d, 16 bytes of nibbles; element j in the low nibble of byte j, element j+16 in
// the high nibble; y = (nibble - 8) * d.
void block_q4_0(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = float((qs[j] & 0x0F) - 8) * d;
        y[j + 16] = float((qs[j] >> 4) - 8) * d;
    }
}

// Q4_1: f16 d, f16 m, nibbles as Q4_0; y = nibble * d + m.
void block_q4_1(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    const float m = load_f16(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = float(qs[j] & 0x0F) * d + m;
        y[j + 16] = float(qs[j] >> 4) * d + m;
    }
}

// The fifth bit of Q5 element j (0..31) is bit j of the little-endian 32-bit qh word.
uint32_t fifth_bits(const uint8_t* qh) {
    return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

// Q5_0: f16 d, qh[4], nibbles; y = (nibble | bit<<4) - 16) * d.
void block_q5_0(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    const uint32_t qh = fifth_bits(b + 2);
    const uint8_t* qs = b + 6;
    for (int j = 0; j < 16; ++j) {
        const int lo = int(qs[j] & 0x0F) | int((qh >> j) & 1u) << 4;
        const int hi = int(qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
        y[j] = float(lo - 16) * d;
        y[j + 16] = float(hi - 16) * d;
    }
}

// Q5_1: f16 d, f16 m, qh[4], nibbles; y = (nibble | bit<<4) * d + m.
void block_q5_1(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    const float m = load_f16(b + 2);
    const uint32_t qh = fifth_bits(b + 4);
    const uint8_t* qs = b + 8;
    for (int j = 0; j < 16; ++j) {
        const int lo = int(qs[j] & 0x0F) | int((qh >> j) & 1u) << 4;
        const int hi = int(qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4;
        y[j] = float(lo) * d + m;
        y[j + 16] = float(hi) * d + m;
    }
}

// K-quant super-blocks hold 8 sub-blocks of 32; their 6-bit scales and mins are packed in 12
// bytes: sub-blocks 0..3 in the low 6 bits of bytes 0..3 (scale) and 4..7 (min); sub-blocks
// 4..7 take their low 4 bits from the nibbles of bytes 8..11 and their top 2 bits from the
// spare top bits of bytes 0..3 (scale) and 4..7 (min).
void k_scale_min(int sub, const uint8_t* s, int* scale, int* min) {
    if (sub < 4) {
        *scale = s[sub] & 63;
        *min = s[sub + 4] & 63;
    } else {
        *scale = (s[sub + 4] & 0x0F) | ((s[sub - 4] >> 6) << 4);
        *min = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
    }
}

// Q4_K: f16 d, f16 dmin, scales[12], qs[128]. Each 64-element chunk c uses 32 bytes of qs:
// low nibbles are sub-block 2c, high nibbles sub-block 2c+1; y = (d*sc) * q - (dmin*m).
void block_q4_k(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    const float dmin = load_f16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qs = b + 16;
    for (int c = 0; c < 4; ++c) {
        int sc, m;
        k_scale_min(2 * c, scales, &sc, &m);
        const float d1 = d * float(sc), m1 = dmin * float(m);
        k_scale_min(2 * c + 1, scales, &sc, &m);
        const float d2 = d * float(sc), m2 = dmin * float(m);
        const uint8_t* q = qs + 32 * c;
        for (int l = 0; l < 32; ++l) y[64 * c + l] = d1 * float(q[l] & 0x0F) - m1;
        for (int l = 0; l < 32; ++l) y[64 * c + 32 + l] = d2 * float(q[l] >> 4) - m2;
    }
}

// Q5_K: f16 d, f16 dmin, scales[12], qh[32], qs[128]. As Q4_K, plus a fifth bit: for sub-block
// s it is bit s of qh[l].
void block_q5_k(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    const float dmin = load_f16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + 48;
    for (int c = 0; c < 4; ++c) {
        int sc, m;
        k_scale_min(2 * c, scales, &sc, &m);
        const float d1 = d * float(sc), m1 = dmin * float(m);
        k_scale_min(2 * c + 1, scales, &sc, &m);
        const float d2 = d * float(sc), m2 = dmin * float(m);
        const uint8_t* q = qs + 32 * c;
        const int bit_lo = 2 * c, bit_hi = 2 * c + 1;
        for (int l = 0; l < 32; ++l)
            y[64 * c + l] = d1 * float((q[l] & 0x0F) + (((qh[l] >> bit_lo) & 1) << 4)) - m1;
        for (int l = 0; l < 32; ++l)
            y[64 * c + 32 + l] = d2 * float((q[l] >> 4) + (((qh[l] >> bit_hi) & 1) << 4)) - m2;
    }
}

// Q6_K: ql[128], qh[64], int8 scales[16], f16 d. Two halves of 128; in half h, for l < 32:
// the four values l, l+32, l+64, l+96 take low 4 bits from ql[64h+l] (low/high nibble) and
// ql[64h+l+32], and 2 high bits from qh[32h+l] (bits 0-1, 2-3, 4-5, 6-7); each group of 16
// has its own int8 scale; y = d * scale * (q - 32).
void block_q6_k(const uint8_t* b, float* y) {
    const uint8_t* ql_all = b;
    const uint8_t* qh_all = b + 128;
    const int8_t* sc_all = reinterpret_cast<const int8_t*>(b + 192);
    const float d = load_f16(b + 208);
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = ql_all + 64 * h;
        const uint8_t* qh = qh_all + 32 * h;
        const int8_t* sc = sc_all + 8 * h;
        float* out = y + 128 * h;
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = int((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32;
            const int q2 = int((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            out[l] = d * float(sc[is]) * float(q1);
            out[l + 32] = d * float(sc[is + 2]) * float(q2);
            out[l + 64] = d * float(sc[is + 4]) * float(q3);
            out[l + 96] = d * float(sc[is + 6]) * float(q4);
        }
    }
}

// Q2_K: 16 scale bytes (low nibble: the 16-value group's scale, high nibble: its min), 64 bytes
// of 2-bit codes, f16 d, f16 dmin. Half h (128 values), for l < 32: values 128h + 32s + l
// (s = 0..3) are bits 2s..2s+1 of qs[32h + l]; value e belongs to group e / 16;
// y = (d * sc) * q - dmin * mn.
int q2_k_code(const uint8_t* b, int e) {
    const uint8_t* qs = b + 16;
    return (qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
}

void block_q2_k(const uint8_t* b, float* y) {
    const uint8_t* sc = b;
    const float d = load_f16(b + 80);
    const float dmin = load_f16(b + 82);
    for (int e = 0; e < 256; ++e) {
        const int q = q2_k_code(b, e);
        const uint8_t s = sc[e / 16];
        const float dl = d * float(s & 0x0F), ml = dmin * float(s >> 4);
        y[e] = dl * float(q) - ml;
    }
}

// Q3_K's 16 6-bit scales from its 12 scale bytes: scale i's low 4 bits are the low (i < 8) or
// high nibble of byte i % 8, its high 2 bits are bits 2(i / 4).. of byte 8 + i % 4.
int q3_k_scale(const uint8_t* scales, int i) {
    const int low = i < 8 ? scales[i] & 0x0F : scales[i - 8] >> 4;
    const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
    return low | high << 4;
}

// Q3_K: hmask[32], qs[64], 12 scale bytes, f16 d. Value e = 128h + 32s + l (l < 32): low 2 bits
// are bits 2s..2s+1 of qs[32h + l], the third is bit 4h + s of hmask[l]; code = low + 4 * bit - 4
// (-4..3); y = (d * (scale[e / 16] - 32)) * code.
int q3_k_code(const uint8_t* b, int e) {
    const int h = e / 128, s = (e / 32) % 4, l = e % 32;
    const int low = (b[32 + 32 * h + l] >> (2 * s)) & 3;
    const int high = (b[l] >> (4 * h + s)) & 1;
    return low + 4 * high - 4;
}

void block_q3_k(const uint8_t* b, float* y) {
    const float d = load_f16(b + 108);
    for (int e = 0; e < 256; ++e) {
        const float dl = d * float(q3_k_scale(b + 96, e / 16) - 32);
        y[e] = dl * float(q3_k_code(b, e));
    }
}

// IQ4_NL and IQ4_XS codes index this table (ggml's kvalues_iq4nl).
constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

// IQ4_NL: f16 d, 16 bytes of indices (element j low nibble of byte j, j + 16 its high);
// y = d * table[index].
void block_iq4_nl(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * float(kIq4Values[b[2 + j] & 0x0F]);
        y[j + 16] = d * float(kIq4Values[b[2 + j] >> 4]);
    }
}

// IQ4_XS sub-block s's 6-bit scale: low 4 bits from nibble s % 2 of scales_l[s / 2] (byte 4 +
// s / 2), high 2 bits from bits 2s.. of the u16 scales_h (bytes 2-3).
int iq4_xs_scale(const uint8_t* b, int s) {
    const int low = (b[4 + s / 2] >> (4 * (s % 2))) & 0x0F;
    const int high = (load_u16(b + 2) >> (2 * s)) & 3;
    return low | high << 4;
}

// IQ4_XS: f16 d, u16 scales_h, 4 scales_l bytes, 128 bytes of indices; sub-block s (32 values)
// takes 16 bytes as IQ4_NL does; y = (d * (scale - 32)) * table[index].
void block_iq4_xs(const uint8_t* b, float* y) {
    const float d = load_f16(b);
    for (int s = 0; s < 8; ++s) {
        const float dl = d * float(iq4_xs_scale(b, s) - 32);
        const uint8_t* qs = b + 8 + 16 * s;
        for (int j = 0; j < 16; ++j) {
            y[32 * s + j] = dl * float(kIq4Values[qs[j] & 0x0F]);
            y[32 * s + j + 16] = dl * float(kIq4Values[qs[j] >> 4]);
        }
    }
}

// MXFP4's e2m1 values doubled (ggml's kvalues_mxfp4): index 8.. are the negatives.
constexpr int8_t kFp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half of MXFP4's E8M0 scale, 2^(e - 128), which multiplies the doubled values: as ggml's
// ggml_e8m0_to_fp32_half (e = 255, NaN in the OCP format, reads as 2^127).
float mxfp4_half_scale(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// MXFP4: E8M0 byte e, 16 bytes of e2m1 codes (element j low nibble of byte j, j + 16 its high);
// y = doubled[code] * 2^(e - 128).
void block_mxfp4(const uint8_t* b, float* y) {
    const float d = mxfp4_half_scale(b[0]);
    for (int j = 0; j < 16; ++j) {
        y[j] = float(kFp4Doubled[b[1 + j] & 0x0F]) * d;
        y[j + 16] = float(kFp4Doubled[b[1 + j] >> 4]) * d;
    }
}

using BlockDecoder = void (*)(const uint8_t*, float*);

BlockDecoder decoder_for(DType t) {
    switch (t) {
        case DType::Q8_0: return block_q8_0;
        case DType::Q4_0: return block_q4_0;
        case DType::Q4_1: return block_q4_1;
        case DType::Q5_0: return block_q5_0;
        case DType::Q5_1: return block_q5_1;
        case DType::Q4_K: return block_q4_k;
        case DType::Q5_K: return block_q5_k;
        case DType::Q6_K: return block_q6_k;
        case DType::Q2_K: return block_q2_k;
        case DType::Q3_K: return block_q3_k;
        case DType::IQ4_NL: return block_iq4_nl;
        case DType::IQ4_XS: return block_iq4_xs;
        case DType::MXFP4: return block_mxfp4;
        default: return nullptr;
    }
}

}  // namespace

float load_float(const uint8_t* base, size_t index, DType t) {
    switch (t) {
        case DType::F32: {
            float f;
            std::memcpy(&f, base + 4 * index, 4);
            return f;
        }
        case DType::F16: return f16_to_f32(load_u16(base + 2 * index));
        default: return bf16_to_f32(load_u16(base + 2 * index));
    }
}

namespace {

// MLX affine: each row of `in` codes is a little-endian bit stream (code j occupies bits
// [j*bits, (j+1)*bits) of the row's bytes); w = scale * q + bias per group, in f32.
// Checks the packing against the shape; returns the bytes of one row of codes.
size_t check_mlx_affine(const RawTensor& t) {
    const int bits = t.bits, group = t.group_size;
    if (bits < 1 || bits > 8 || group <= 0 || t.shape.empty())
        fail(t.file, ": tensor '", t.name, "' has invalid MLX quantization (bits ", bits,
             ", group size ", group, ")");
    const int64_t in = t.shape.back();
    if (in % group != 0 || (in * bits) % 32 != 0)
        fail(t.file, ": tensor '", t.name, "' has ", in, " input columns, which ", bits,
             "-bit groups of ", group, " cannot pack");
    const int64_t rows = in ? t.numel() / in : 0;
    const size_t row_bytes = size_t(in * bits / 8);
    if (t.nbytes != size_t(rows) * row_bytes || !t.scales || !t.biases)
        fail(t.file, ": tensor '", t.name, "' packed data does not match its shape ",
             t.shape_str(), " at ", bits, " bits");
    return row_bytes;
}

// Row r of a checked MLX affine tensor: out[in].
void mlx_affine_row(const RawTensor& t, int64_t r, size_t row_bytes, float* out) {
    const int bits = t.bits, group = t.group_size;
    const int64_t in = t.shape.back();
    const int64_t groups = in / group;
    const uint32_t mask = (1u << bits) - 1u;
    const uint8_t* row = t.data + size_t(r) * row_bytes;
    for (int64_t g = 0; g < groups; ++g) {
        const size_t gi = size_t(r * groups + g);
        const float scale = load_float(t.scales, gi, t.scale_dtype);
        const float bias = load_float(t.biases, gi, t.scale_dtype);
        const int64_t j0 = g * group, j1 = (g + 1) * group;
        // Byte-aligned widths read codes directly; others walk the bit stream.
        if (bits == 8) {
            for (int64_t j = j0; j < j1; ++j) out[j] = scale * float(row[j]) + bias;
            continue;
        }
        if (bits == 4) {
            for (int64_t j = j0; j < j1; ++j)
                out[j] = scale * float((row[j / 2] >> (4 * (j & 1))) & 15u) + bias;
            continue;
        }
        for (int64_t j = j0; j < j1; ++j) {
            const uint64_t bit = uint64_t(j) * uint64_t(bits);
            // A code spans at most two bytes (bits <= 8).
            uint32_t window = row[bit / 8];
            if ((bit % 8) + uint64_t(bits) > 8) window |= uint32_t(row[bit / 8 + 1]) << 8;
            const uint32_t q = (window >> (bit % 8)) & mask;
            out[j] = scale * float(q) + bias;
        }
    }
}

void dequantize_mlx_affine(const RawTensor& t, float* out) {
    const size_t row_bytes = check_mlx_affine(t);
    const int64_t in = t.shape.back();
    const int64_t rows = in ? t.numel() / in : 0;
    for (int64_t r = 0; r < rows; ++r) mlx_affine_row(t, r, row_bytes, out + r * in);
}

}  // namespace

TensorRows::TensorRows(const RawTensor& t) : t_(&t) {
    if (t.shape.empty()) fail(t.file, ": tensor '", t.name, "' has no dimensions");
    cols_ = t.shape.back();
    rows_ = cols_ ? t.numel() / cols_ : 0;
    switch (t.dtype) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
            row_bytes_ = size_t(cols_) * (t.dtype == DType::F32 ? 4 : 2);
            if (t.nbytes != size_t(rows_) * row_bytes_)
                fail(t.file, ": tensor '", t.name, "' holds ", t.nbytes, " bytes for shape ",
                     t.shape_str());
            return;
        case DType::MLX_AFFINE:
            row_bytes_ = check_mlx_affine(t);
            return;
        default:
            break;
    }
    decode_ = decoder_for(t.dtype);
    if (!decode_ || !dtype_block_layout(t.dtype, &block_, &block_bytes_))
        fail(t.file, ": tensor '", t.name, "' has type ", dtype_name(t.dtype),
             ", which cannot be dequantized");
    if (cols_ % block_ != 0)
        fail(t.file, ": tensor '", t.name, "' of type ", dtype_name(t.dtype), " has rows of ",
             cols_, " values, not whole ", block_, "-value blocks");
    row_bytes_ = size_t(cols_ / block_) * block_bytes_;
    if (t.nbytes != size_t(rows_) * row_bytes_)
        fail(t.file, ": tensor '", t.name, "' of type ", dtype_name(t.dtype), " and shape ",
             t.shape_str(), " holds ", t.nbytes, " bytes, expected ", size_t(rows_) * row_bytes_);
}

void TensorRows::read(int64_t row, float* out) const {
    const RawTensor& t = *t_;
    const uint8_t* src = t.data + size_t(row) * row_bytes_;
    switch (t.dtype) {
        case DType::F32: std::memcpy(out, src, size_t(cols_) * 4); return;
        case DType::F16:
            for (int64_t j = 0; j < cols_; ++j) out[j] = f16_to_f32(load_u16(src + 2 * j));
            return;
        case DType::BF16: widen_bf16(src, reinterpret_cast<uint32_t*>(out), cols_); return;
        case DType::MLX_AFFINE: mlx_affine_row(t, row, row_bytes_, out); return;
        default:
            for (int64_t b = 0; b < cols_ / block_; ++b)
                decode_(src + size_t(b) * block_bytes_, out + b * block_);
    }
}

void dequantize_rows_to_f32(const RawTensor& t, int64_t first_row, int64_t n_rows, float* out) {
    const TensorRows reader(t);
    if (first_row < 0 || n_rows < 0 || first_row > reader.rows() ||
        n_rows > reader.rows() - first_row)
        fail(t.file, ": rows [", first_row, ", ", first_row + n_rows, ") of tensor '", t.name,
             "' are outside its ", reader.rows(), " rows");
    for (int64_t r = 0; r < n_rows; ++r) reader.read(first_row + r, out + r * reader.cols());
}

int affine_code_bits(const RawTensor& t, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0 || t.numel() != rows * cols) return 0;
    switch (t.dtype) {
        case DType::Q4_K: return cols % 256 == 0 && t.nbytes == size_t(rows * cols / 256) * 144 ? 4 : 0;
        case DType::Q5_K: return cols % 256 == 0 && t.nbytes == size_t(rows * cols / 256) * 176 ? 8 : 0;
        case DType::Q5_1: return cols % 32 == 0 && t.nbytes == size_t(rows * cols / 32) * 24 ? 8 : 0;
        case DType::MLX_AFFINE:
            if (t.bits < 2 || t.bits > 8 || t.group_size <= 0 || t.group_size % 32 ||
                cols % t.group_size || (cols * t.bits) % 8 || !t.scales || !t.biases ||
                t.nbytes != size_t(rows * cols * t.bits / 8))
                return 0;
            return t.bits <= 4 ? 4 : 8;
        default: return 0;
    }
}

namespace {

// Q4_K (five false) or Q5_K codes, scales and mins, as block_q4_k / block_q5_k read them.
void affine_k_block_codes(const uint8_t* block, bool five, uint8_t* codes, uint8_t* scales, uint8_t* mins,
                          uint16_t* d, uint16_t* dmin) {
    *d = load_u16(block);
    *dmin = load_u16(block + 2);
    const uint8_t* qh = block + 16;
    const uint8_t* qs = block + (five ? 48 : 16);
    for (int s = 0; s < 8; ++s) {  // sub-block s is one nibble half of 32 bytes (and bit s of qh)
        int sc, mn;
        k_scale_min(s, block + 4, &sc, &mn);
        scales[s] = uint8_t(sc);
        mins[s] = uint8_t(mn);
        const uint8_t* q = qs + 32 * (s / 2);
        for (int l = 0; l < 32; ++l) {
            int code = s % 2 ? q[l] >> 4 : q[l] & 0x0F;
            if (five) code |= ((qh[l] >> s) & 1) << 4;
            codes[s * 32 + l] = uint8_t(code);
        }
    }
}

}  // namespace

void affine_row(const RawTensor& t, int64_t row, int64_t cols, uint8_t* codes, float* d, float* m) {
    if (t.dtype == DType::Q4_K || t.dtype == DType::Q5_K) {
        // As block_q4_k / block_q5_k: sub-block s of a 256-value super-block is 32 values of
        // one nibble half (plus, for Q5_K, bit s of qh[l]).
        const bool five = t.dtype == DType::Q5_K;
        const size_t block_bytes = five ? 176 : 144;
        for (int64_t sb = 0; sb < cols / 256; ++sb) {
            uint8_t sc[8], mn[8];
            uint16_t dd, dmin;
            affine_k_block_codes(t.data + size_t(row * cols / 256 + sb) * block_bytes, five, codes + sb * 256, sc, mn,
                                 &dd, &dmin);
            for (int s = 0; s < 8; ++s) {
                d[sb * 8 + s] = f16_to_f32(dd) * float(sc[s]);
                m[sb * 8 + s] = -(f16_to_f32(dmin) * float(mn[s]));
            }
        }
        return;
    }
    if (t.dtype == DType::Q5_1) {  // as block_q5_1
        for (int64_t b = 0; b < cols / 32; ++b) {
            const uint8_t* blk = t.data + size_t(row * cols / 32 + b) * 24;
            d[b] = load_f16(blk);
            m[b] = load_f16(blk + 2);
            const uint32_t qh = fifth_bits(blk + 4);
            const uint8_t* qs = blk + 8;
            for (int j = 0; j < 16; ++j) {
                codes[b * 32 + j] = uint8_t((qs[j] & 0x0F) | ((qh >> j) & 1u) << 4);
                codes[b * 32 + j + 16] = uint8_t((qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4);
            }
        }
        return;
    }
    // MLX affine: code j at bits [j*bits, (j+1)*bits) of the row; one scale and bias per group.
    const size_t row_bytes = size_t(cols * t.bits / 8);
    const uint8_t* data = t.data + size_t(row) * row_bytes;
    const uint32_t mask = (1u << t.bits) - 1u;
    for (int64_t j = 0; j < cols; ++j) {
        const uint64_t bit = uint64_t(j) * uint64_t(t.bits);
        uint32_t window = data[bit / 8];
        if ((bit % 8) + uint64_t(t.bits) > 8) window |= uint32_t(data[bit / 8 + 1]) << 8;
        codes[j] = uint8_t((window >> (bit % 8)) & mask);
    }
    const int64_t groups = cols / t.group_size;
    for (int64_t b = 0; b < cols / 32; ++b) {
        const size_t gi = size_t(row * groups + b * 32 / t.group_size);
        d[b] = load_float(t.scales, gi, t.scale_dtype);
        m[b] = load_float(t.biases, gi, t.scale_dtype);
    }
}

void q5_0_block_codes(const uint8_t* block, int8_t* codes, uint16_t* d) {
    *d = load_u16(block);
    const uint32_t qh = fifth_bits(block + 2);
    const uint8_t* qs = block + 6;
    for (int j = 0; j < 16; ++j) {  // as block_q5_0
        codes[j] = int8_t((int(qs[j] & 0x0F) | int((qh >> j) & 1u) << 4) - 16);
        codes[j + 16] = int8_t((int(qs[j] >> 4) | int((qh >> (j + 16)) & 1u) << 4) - 16);
    }
}

void q6_k_block_codes(const uint8_t* block, uint8_t* codes, int8_t* scales, uint16_t* d) {
    const uint8_t* ql = block;         // [128] low 4 bits
    const uint8_t* qh = block + 128;   // [64] high 2 bits, four per byte
    std::memcpy(scales, block + 192, 16);
    *d = load_u16(block + 208);
    for (int h = 0; h < 2; ++h)  // as block_q6_k: value 128h + 32g + l takes nibble and bits g
        for (int l = 0; l < 32; ++l)
            for (int g = 0; g < 4; ++g) {
                const uint8_t byte = ql[64 * h + l + 32 * (g % 2)];
                const uint8_t low = g < 2 ? byte & 0x0F : byte >> 4;
                const int high = (qh[32 * h + l] >> (2 * g)) & 3;
                codes[128 * h + 32 * g + l] = uint8_t(low | high << 4);
            }
}

void q4_k_block_codes(const uint8_t* block, uint8_t* codes, uint8_t* scales, uint8_t* mins,
                      uint16_t* d, uint16_t* dmin) {
    affine_k_block_codes(block, false, codes, scales, mins, d, dmin);
}

void q5_k_block_codes(const uint8_t* block, uint8_t* codes, uint8_t* scales, uint8_t* mins,
                      uint16_t* d, uint16_t* dmin) {
    affine_k_block_codes(block, true, codes, scales, mins, d, dmin);
}

void q3_k_block_codes(const uint8_t* block, uint8_t* codes, int8_t* scales, uint16_t* d) {
    for (int e = 0; e < 256; ++e) codes[e] = uint8_t(q3_k_code(block, e) + 4);
    for (int i = 0; i < 16; ++i) scales[i] = int8_t(q3_k_scale(block + 96, i) - 32);
    *d = load_u16(block + 108);
}

void q2_k_block_codes(const uint8_t* block, uint8_t* codes, uint8_t* scales, uint16_t* d,
                      uint16_t* dmin) {
    for (int e = 0; e < 256; ++e) codes[e] = uint8_t(q2_k_code(block, e));
    std::memcpy(scales, block, 16);
    *d = load_u16(block + 80);
    *dmin = load_u16(block + 82);
}

void q3_k_block_as_q6_k(const uint8_t* q3_k, uint8_t* q6_k) {
    // Q6_K's value e is (d * scales[e / 16]) * (code - 32), Q3_K's (d * (scale - 32)) * code3: the
    // same two products with code = code3 + 32 (28..35) and the int8 scale - 32 (-32..31).
    std::memset(q6_k, 0, 210);
    uint8_t* ql = q6_k;        // [128] low 4 bits
    uint8_t* qh = q6_k + 128;  // [64] high 2 bits, four per byte
    for (int h = 0; h < 2; ++h)  // the layout q6_k_block_codes reads
        for (int l = 0; l < 32; ++l)
            for (int g = 0; g < 4; ++g) {
                const int code = q3_k_code(q3_k, 128 * h + 32 * g + l) + 32;
                ql[64 * h + l + 32 * (g % 2)] |= uint8_t((code & 0x0F) << (g < 2 ? 0 : 4));
                qh[32 * h + l] |= uint8_t((code >> 4) << (2 * g));
            }
    for (int i = 0; i < 16; ++i) q6_k[192 + i] = uint8_t(int8_t(q3_k_scale(q3_k + 96, i) - 32));
    std::memcpy(q6_k + 208, q3_k + 108, 2);  // d
}

const uint8_t* iq4_xs_sub_block(const uint8_t* block, int s, float* scale) {
    *scale = load_f16(block) * float(iq4_xs_scale(block, s) - 32);
    return block + 8 + 16 * s;
}

namespace {

// The f16 bits of MXFP4's half scale 2^(e - 128), e = kMxfp4SmallestQ8_0Exponent..
// kMxfp4LargestQ8_0Exponent (2^-24, the smallest subnormal, .. 2^15).
uint16_t mxfp4_half_scale_f16(int e) {
    const int k = e - 128;
    return uint16_t(k >= -14 ? (k + 15) << 10 : 1 << (k + 24));
}

}  // namespace

bool mxfp4_f16_scale(const uint8_t* block, uint16_t* d) {
    const int e = block[0];
    if (e >= kMxfp4SmallestQ8_0Exponent && e <= kMxfp4LargestQ8_0Exponent) {
        *d = mxfp4_half_scale_f16(e);
        return true;
    }
    for (int j = 0; j < 16; ++j)  // codes 0 and 8 are +0 and -0
        if ((block[1 + j] & 0x07) || (block[1 + j] & 0x70)) return false;
    *d = 0;
    return true;
}

bool has_q8_0_block_form(const RawTensor& t) {
    if (t.dtype == DType::Q5_0 || t.dtype == DType::IQ4_NL) return true;
    if (t.dtype != DType::MXFP4) return false;
    // An E8M0 scale above 2^15 (values from 2^16 up) has no f16 scale; weights never come near.
    for (size_t b = 0; b < t.nbytes / 17; ++b)
        if (t.data[b * 17] > kMxfp4LargestQ8_0Exponent) return false;
    return true;
}

void q8_0_block_form(DType type, const uint8_t* block, int8_t* codes, uint16_t* d) {
    switch (type) {
        case DType::Q5_0: q5_0_block_codes(block, codes, d); return;
        case DType::IQ4_NL:  // as block_iq4_nl; d * value is one exact product either way
            *d = load_u16(block);
            for (int j = 0; j < 16; ++j) {
                codes[j] = kIq4Values[block[2 + j] & 0x0F];
                codes[j + 16] = kIq4Values[block[2 + j] >> 4];
            }
            return;
        case DType::MXFP4: {
            // 2^(e - 128) is an f16 (normal or subnormal) for e = 104..143: the codes are the
            // doubled e2m1 values. Below, values under 2^-21 in magnitude: scale 2^-24, the
            // smallest f16, with each value rounded to a multiple of it (off by 2^-25 at most).
            const int e = block[0];
            const int shift = std::max(0, kMxfp4SmallestQ8_0Exponent - e);
            *d = mxfp4_half_scale_f16(std::max(e, kMxfp4SmallestQ8_0Exponent));
            for (int j = 0; j < 32; ++j) {
                const int v = kFp4Doubled[j < 16 ? block[1 + j] & 0x0F : block[1 + j - 16] >> 4];
                codes[j] = int8_t(std::nearbyint(std::ldexp(float(v), -shift)));
            }
            return;
        }
        default: fail("q8_0_block_form: ", dtype_name(type), " has no Q8_0 form");
    }
}

void dequantize_to_f32(const RawTensor& t, float* out) {
    const int64_t n = t.numel();
    switch (t.dtype) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
            if (t.nbytes != size_t(n) * (t.dtype == DType::F32 ? 4 : 2))
                fail(t.file, ": tensor '", t.name, "' holds ", t.nbytes, " bytes for shape ",
                     t.shape_str());
            for (int64_t i = 0; i < n; ++i) out[i] = load_float(t.data, size_t(i), t.dtype);
            return;
        case DType::MLX_AFFINE:
            dequantize_mlx_affine(t, out);
            return;
        default:
            break;
    }
    BlockDecoder decode = decoder_for(t.dtype);
    int64_t block = 0;
    size_t block_bytes = 0;
    if (!decode || !dtype_block_layout(t.dtype, &block, &block_bytes))
        fail(t.file, ": tensor '", t.name, "' has type ", dtype_name(t.dtype),
             ", which cannot be dequantized");
    if (n % block != 0 || t.nbytes != size_t(n / block) * block_bytes)
        fail(t.file, ": tensor '", t.name, "' of type ", dtype_name(t.dtype), " and shape ",
             t.shape_str(), " holds ", t.nbytes, " bytes, expected ",
             size_t(n / block) * block_bytes);
    const int64_t blocks = n / block;
    for (int64_t i = 0; i < blocks; ++i) decode(t.data + size_t(i) * block_bytes, out + i * block);
}

}  // namespace nextn
