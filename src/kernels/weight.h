#pragma once
// Weight matrices in the layouts the matmul kernels read. A WeightMatrix is W[rows, cols] with
// y = x · Wᵀ (PyTorch's Linear convention): rows = output features, cols = input features.
// Every type is converted once at load (make_weight); the kernels never convert layouts.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/huge_pages.h"
#include "formats/raw_tensor.h"

namespace nextn {

class ThreadPool;

enum class WType {
    F32,
    BF16,  // raw bf16 bits, row-major
    F16,   // IEEE half bits, row-major
    Q8_0,  // ggml block layout: 32 values, f16 scale + 32 x int8 (34 bytes); cols % 32 == 0
    Q4_0,  // ggml block layout: 32 values, f16 scale + 16 bytes of 4-bit codes (18 bytes)
    Q4_1,  // ggml block layout: 32 values, f16 scale + f16 offset + 16 bytes of codes (20 bytes)
    // Q8_0 / Q4_0 / Q4_1 values in the chunked layout of the int8 dot-product kernels
    // (kernels/int8_dot.h), made only by repack_for_int8_dot.
    Q8_0X,
    Q4_0X,
    Q4_1X,
    // 4-bit (Q4_1FX) or 8-bit (Q8_1FX) codes with an f32 scale and offset per 32 values,
    // chunked for the int8 kernels: GGUF Q4_K / Q5_K / Q5_1 and MLX 2..8-bit held exactly, from
    // repack_affine_for_int8_dot. Only built where the int8 kernels run (no f32-activation
    // kernel reads them).
    Q4_1FX,
    Q8_1FX,
    // GGUF Q6_K (6-bit codes, an int8 scale per 16 values, an f16 scale per 256) chunked for the
    // int8 kernels, from repack_q6_k_for_int8_dot; also only where the int8 kernels run.
    Q6_KX,
    // Q4_0 / Q8_0 values in 16-row groups whose vector lanes are the rows (kernels/row_groups.h),
    // for tables whose int8 kernel reads them (KernelTable::row_groups); from repack_for_int8_dot.
    Q4_0R,
    Q8_0R,
    // GGUF Q4_K in 16-row groups (kernels/row_groups.h): the 4-bit codes as Q4_0R's, each row's
    // super-block scales and 6-bit sub-block scales and mins kept as the file has them (4.625
    // bits a value, where Q4_1FX takes 6), for tables whose int8 kernel reads it; from
    // repack_q4_k_as_row_groups.
    Q4_KR,
    // GGUF Q6_K in 16-row groups: its 6-bit codes as Q6_KX's, its f16 and int8 scales as the file
    // has them (6.5625 bits a value, where Q6_KX takes 7); from repack_q6_k_as_row_groups.
    Q6_KR,
    // GGUF Q5_K in 16-row groups: Q4_KR plus a plane of the codes' fifth bits (5.625 bits a
    // value, where Q8_1FX takes 10); from repack_q5_k_as_row_groups.
    Q5_KR,
    // BF16's bytes, multiplied with activations rounded to bf16 by the CPU's bf16 dot product
    // (AVX512_BF16; kernels/bf16_dot.h): built only where that kernel runs and the user asked for
    // bf16 activations, from a BF16 matrix whose bytes it keeps.
    BF16D,
    // GGUF IQ4_NL and MXFP4 in 16-row groups: Q4_0R's layout and f16 scales, each 4-bit code an
    // index into the type's table of 16 values (kernels/row_groups.h row_group_code_table), for
    // the int8 kernels (every table that has them reads them); from
    // repack_table_codes_as_row_groups. 4.5 bits a value.
    IQ4_NLR,
    MXFP4R,
    // GGUF Q3_K in 16-row groups: Q6_KR's scales and arithmetic, its 3-bit codes in a plane of
    // low 2 bits and one of high bits (kernels/row_groups.h): 3.5625 bits a value (the file's
    // 3.4375, its 6-bit scales held as bytes).
    Q3_KR,
    // GGUF IQ4_XS in 16-row groups: IQ4_NLR's codes, each block's scale d * (sc - 32) as an f32
    // (no f16 holds it): 4.75 bits a value.
    IQ4_XSR,
    // GGUF Q2_K in 16-row groups: Q3_KR's 2-bit code planes, Q4_KR's super-block scales, and the
    // file's 4-bit scale and min per 16 values (kernels/row_groups.h): 2.625 bits a value, the
    // file's.
    Q2_KR,
    // Target only (never the type of a built WeightMatrix): keep the source's own type when a
    // kernel reads it directly (F32, BF16, F16, Q8_0, Q4_0, Q4_1), else widen to F32.
    Native,
};

// Q4_0R / Q8_0R / Q4_KR / Q5_KR / Q6_KR / Q3_KR / Q2_KR / IQ4_NLR / MXFP4R / IQ4_XSR: rows stored
// in groups of kRowGroupRows (kernels/row_groups.h has the layout).
inline constexpr int64_t kRowGroupRows = 16;
constexpr bool is_row_group_type(WType t) {
    return t == WType::Q4_0R || t == WType::Q8_0R || t == WType::Q4_KR || t == WType::Q6_KR ||
           t == WType::Q5_KR || t == WType::IQ4_NLR || t == WType::MXFP4R || t == WType::IQ4_XSR ||
           t == WType::Q3_KR || t == WType::Q2_KR;
}

const char* wtype_name(WType t);
// Parses a --quant value: f32, bf16, f16, q8_0 (or q8), q4_0 (or q4), q4_1, native. Throws Error.
WType parse_wtype(const std::string& name);
// Bytes of one row of `cols` values; 0 when the type cannot hold such a row (block types
// need cols % 32 == 0).
size_t wtype_row_bytes(WType t, int64_t cols);
// Bytes of a [rows, cols] matrix of type t: rows x wtype_row_bytes, the rows of Q4_0R rounded up
// to whole 16-row groups, and Q8_0R's (WeightMatrix::nbytes of such a matrix).
size_t wtype_matrix_bytes(WType t, int64_t rows, int64_t cols);

struct WeightMatrix {
    WType type = WType::F32;
    int64_t rows = 0;
    int64_t cols = 0;
    // Row r starts at data + r * row_bytes, except in the row-group types (Q4_0R, ...), whose rows share 16-row groups
    // (there row_bytes is a group's bytes / 16, and the bytes hold whole groups).
    const uint8_t* data = nullptr;
    size_t row_bytes = 0;
    std::shared_ptr<void> owner;    // keeps converted data alive (null when data is mapped)

    bool empty() const { return data == nullptr; }
    // Rows the bytes hold: `rows`, or for the row-group types rows rounded up to whole 16-row groups.
    int64_t stored_rows() const {
        return is_row_group_type(type) ? (rows + kRowGroupRows - 1) / kRowGroupRows * kRowGroupRows : rows;
    }
    size_t nbytes() const { return size_t(stored_rows()) * row_bytes; }
};

// Zeroed memory for weight bytes, 64-byte aligned; buffers of 2 MiB and more are 2 MiB aligned
// and marked for transparent huge pages (decode streams every weight once per token, and with
// 4 KiB pages the TLB misses cost a measurable share of the bandwidth). `what` names the weight
// in the out-of-memory error. `zeroed` false leaves the bytes as they come (untouched pages
// take no memory until written: for a buffer filled piece by piece while its sources are freed).
std::shared_ptr<void> allocate_weight_memory(size_t bytes, const std::string& what,
                                             bool zeroed = true);
// Throws Error naming `what` and the sizes when a new weight of `bytes` (64 MiB or more) cannot
// fit in MemAvailable + SwapFree. Called before allocating memory a load adds; not for a buffer
// that takes over memory freed as it fills (pack_small_matrices).
void require_weight_memory(size_t bytes, const std::string& what);

// Builds a kernel weight from a checkpoint tensor of shape [rows, cols] (or [rows] for vectors
// treated as one column), copied into 64-byte aligned memory owned by the result.
//   target F32/BF16/F16/Q8_0/Q4_0: the result has that type (float sources are rounded or
//     quantized; block sources are dequantized first, except that a GGUF Q8_0/Q4_0 source whose
//     type equals the target keeps its blocks byte for byte). A block target with
//     cols % 32 != 0 cannot be represented and falls back to F32 (check w.type).
//   target Native: F32/BF16/F16/Q8_0/Q4_0/Q4_1 sources keep their type and bytes; GGUF Q5_0,
//     IQ4_NL and MXFP4 become Q8_0 with the same values (also for target Q8_0; formats/dequant.h
//     has_q8_0_block_form); others -> F32.
//   MLX affine 4-bit (group 32/64/..) with target Native or Q4_1 becomes Q4_1 with the same
//   decoded values when its scales and biases are exact in f16 (else F32 / requantized).
//   how.int8_layout: a Q8_0/Q4_0/Q4_1 result comes in its chunked int8-dot layout
//     (int8_dot_type_for), repacked row by row as it is made.
//   how.pool: rows are converted on the pool. A tensor that needs converting is streamed row by
//     row (formats/dequant.h TensorRows): no f32 copy of the whole tensor is made.
//   how.row_groups: with int8_layout, the block types that come in 16-row groups (Q4_0 as Q4_0R,
//     Q8_0 as Q8_0R) rather than chunked (for a table whose int8 kernel reads them:
//     KernelTable::row_groups). q4_k, q5_k, q6_k: GGUF Q4_K as Q4_KR rather than Q4_1FX, Q5_K as
//     Q5_KR rather than Q8_1FX, Q6_K as Q6_KR rather than Q6_KX (model/weights.cpp decides;
//     make_weight never builds these).
struct RowGroupLayouts {
    bool q4_0 = false;
    bool q8_0 = false;
    bool q4_k = false;
    bool q6_k = false;
    bool q5_k = false;
};
struct WeightBuild {
    ThreadPool* pool = nullptr;
    bool int8_layout = false;
    RowGroupLayouts row_groups;
};
WeightMatrix make_weight(const RawTensor& t, int64_t rows, int64_t cols, WType target,
                         const WeightBuild& how = {});
// Same, from f32 values in memory ([rows, cols], row-major): synthetic models and tests. Here
// a chunked int8-dot target (Q8_0X, ...) is also accepted: its block type, then repacked.
WeightMatrix make_weight_f32(const float* values, int64_t rows, int64_t cols, WType target);

// A matrix of `type` built row by row (on `pool` when given): fill(r, out) writes row r's cols
// f32 values and must be safe to call concurrently for different rows, and must not throw.
// The bytes equal make_weight_f32 of the same values (including its F32 fallback for block
// types when cols % 32 != 0); an int8-dot type is encoded and repacked a row at a time, except
// the K-quant types (k_quant_dtype), which take the whole matrix's GGUF blocks first.
using RowFill = std::function<void(int64_t row, float* out)>;
// The type build_weight (and make_weight_f32) stores for `type`: F32 for Native, and for a block
// or int8-dot type whose rows cols cannot fill with whole blocks (cols % 32 != 0; the K-quant
// types: cols % 256 != 0).
WType stored_weight_type(WType type, int64_t cols);
// The GGUF K-quant whose values a type holds when build_weight makes it: Q4_K for Q4_KR and
// Q4_1FX, Q6_K for Q6_KR and Q6_KX, Q5_K for Q5_KR and Q8_1FX (build_weight encodes the rows into that type's blocks,
// kernels/quant_k.h, the whole matrix at once, then repacks them as a checkpoint's); F32 for any
// other type.
DType k_quant_dtype(WType t);
// The type the int8 kernels hold a GGUF K-quant tensor (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) in: its
// 16-row groups where `groups` says the table reads them (Q3_KR, Q4_KR, Q5_KR, Q6_KR), else
// chunked (Q6_KX for Q3_K too, Q4_1FX, Q8_1FX, Q6_KX); Q2_K always Q2_KR (it has no chunked form;
// every table multiplies the row-group types); F32 for any other dtype.
WType k_quant_storage_type(DType d, RowGroupLayouts groups);
// A GGUF K-quant tensor [rows, cols] as `target`, a type k_quant_dtype maps to t.dtype (or Q6_KX
// for a Q3_K tensor: the Q6_K tensor with its values), its rows repacked on `pool` when given. False (out untouched) when t is no such tensor of rows * cols
// values in whole super-blocks.
bool repack_k_quant_tensor(const RawTensor& t, int64_t rows, int64_t cols, WType target, WeightMatrix& out,
                           ThreadPool* pool = nullptr);
WeightMatrix build_weight(int64_t rows, int64_t cols, WType type, ThreadPool* pool,
                          const RowFill& fill);

// One row of `cols` f32 values encoded as `type` (F32, BF16, F16, Q8_0, Q4_0, Q4_1) into dst
// (wtype_row_bytes(type, cols) bytes): the encoder make_weight_f32 uses.
void encode_row_f32(const float* x, int64_t cols, WType type, uint8_t* dst);

// A deep copy of w's bytes in new aligned memory (the file's bytes at load; benchmarks rotate
// copies to defeat caches), its rows copied on `pool` when given.
WeightMatrix clone_weight(const WeightMatrix& w, ThreadPool* pool = nullptr);

// Reads row r of W as f32 (embedding lookups, tests). Exactly the values the kernels use.
void weight_row_f32(const WeightMatrix& w, int64_t row, float* out);

// Converts any checkpoint tensor to a dense f32 array (norm weights, small vectors).
std::vector<float> tensor_to_f32(const RawTensor& t);

}  // namespace nextn
