#include "kernels/weight.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/memory_info.h"
#include "core/thread_pool.h"
#include "formats/dequant.h"
#include "formats/ggml_types.h"
#include "kernels/int8_dot.h"
#include "kernels/row_groups.h"
#include "kernels/quant.h"
#include "kernels/quant_k.h"

namespace nextn {

const char* wtype_name(WType t) {
    switch (t) {
        case WType::F32: return "f32";
        case WType::BF16: return "bf16";
        case WType::F16: return "f16";
        case WType::Q8_0: return "q8_0";
        case WType::Q4_0: return "q4_0";
        case WType::Q4_1: return "q4_1";
        case WType::Q8_0X: return "q8_0 (int8-dot layout)";
        case WType::Q4_0X: return "q4_0 (int8-dot layout)";
        case WType::Q4_1X: return "q4_1 (int8-dot layout)";
        case WType::Q4_1FX: return "q4 affine, f32 scales (int8-dot layout)";
        case WType::Q8_1FX: return "q8 affine, f32 scales (int8-dot layout)";
        case WType::Q6_KX: return "q6_k (int8-dot layout)";
        case WType::Q4_0R: return "q4_0 (16-row groups)";
        case WType::Q8_0R: return "q8_0 (16-row groups)";
        case WType::Q4_KR: return "q4_k (16-row groups)";
        case WType::Q6_KR: return "q6_k (16-row groups)";
        case WType::Q5_KR: return "q5_k (16-row groups)";
        case WType::IQ4_NLR: return "iq4_nl (16-row groups)";
        case WType::MXFP4R: return "mxfp4 (16-row groups)";
        case WType::IQ4_XSR: return "iq4_xs (16-row groups, f32 scales)";
        case WType::Q3_KR: return "q3_k (16-row groups)";
        case WType::Q2_KR: return "q2_k (16-row groups)";
        case WType::BF16D: return "bf16 (bf16-dot)";
        case WType::Native: return "native";
    }
    return "?";
}

WType parse_wtype(const std::string& name) {
    if (name == "f32") return WType::F32;
    if (name == "bf16") return WType::BF16;
    if (name == "f16") return WType::F16;
    if (name == "q8_0" || name == "q8") return WType::Q8_0;
    if (name == "q4_0" || name == "q4") return WType::Q4_0;
    if (name == "q4_1") return WType::Q4_1;
    if (name == "native") return WType::Native;
    fail("unknown weight type '", name, "' (supported: f32, bf16, f16, q8_0, q4, q4_1, native)");
}

size_t wtype_row_bytes(WType t, int64_t cols) {
    if (cols <= 0) return 0;
    switch (t) {
        case WType::F32: return size_t(cols) * 4;
        case WType::BF16:
        case WType::BF16D:
        case WType::F16: return size_t(cols) * 2;
        case WType::Q8_0:
            return cols % kQuantBlock ? 0 : size_t(cols / kQuantBlock) * sizeof(BlockQ8_0);
        case WType::Q4_0:
            return cols % kQuantBlock ? 0 : size_t(cols / kQuantBlock) * sizeof(BlockQ4_0);
        case WType::Q4_1:
            return cols % kQuantBlock ? 0 : size_t(cols / kQuantBlock) * sizeof(BlockQ4_1);
        case WType::Q8_0X:
        case WType::Q4_0X:
        case WType::Q4_1X:
        case WType::Q4_1FX:
        case WType::Q8_1FX:
        case WType::Q6_KX:
        case WType::Q4_0R:
        case WType::Q8_0R:
        case WType::Q4_KR:
        case WType::Q6_KR:
        case WType::Q5_KR:
        case WType::IQ4_NLR:
        case WType::MXFP4R:
        case WType::IQ4_XSR:
        case WType::Q3_KR:
        case WType::Q2_KR: return int8_dot_row_bytes(t, cols);
        case WType::Native: return 0;
    }
    return 0;
}

size_t wtype_matrix_bytes(WType t, int64_t rows, int64_t cols) {
    WeightMatrix shape;
    shape.type = t;
    shape.rows = rows;
    shape.row_bytes = wtype_row_bytes(t, cols);
    return shape.nbytes();
}

namespace {

// The DType a WType's bytes correspond to, for "keep as is" decisions.
bool same_layout(DType d, WType w) {
    return (d == DType::F32 && w == WType::F32) || (d == DType::BF16 && w == WType::BF16) ||
           (d == DType::F16 && w == WType::F16) || (d == DType::Q8_0 && w == WType::Q8_0) ||
           (d == DType::Q4_0 && w == WType::Q4_0) || (d == DType::Q4_1 && w == WType::Q4_1);
}

WType native_type(DType d) {
    switch (d) {
        case DType::BF16: return WType::BF16;
        case DType::F16: return WType::F16;
        case DType::Q8_0: return WType::Q8_0;
        case DType::Q4_0: return WType::Q4_0;
        case DType::Q4_1: return WType::Q4_1;
        default: return WType::F32;
    }
}

// Rows start 64-byte aligned only if row_bytes is; the buffer itself always is.
WeightMatrix allocate(WType type, int64_t rows, int64_t cols, bool zeroed = true) {
    WeightMatrix w;
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = wtype_row_bytes(type, cols);
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " " +
                             wtype_name(type) + " weight";
    require_weight_memory(w.nbytes(), what);
    w.owner = allocate_weight_memory(w.nbytes(), what, zeroed);
    w.data = static_cast<const uint8_t*>(w.owner.get());
    return w;
}

uint8_t* mutable_data(WeightMatrix& w) { return const_cast<uint8_t*>(w.data); }


// MLX affine 4-bit (codes packed little-endian, 8 per uint32; group size a multiple of 32)
// repacked into Q4_1 blocks, whose decode code * d + m is then exactly MLX's scale * q + bias.
// Returns false (caller widens to f32) when a scale or bias has no exact f16 form.
bool repack_mlx4_as_q4_1(const RawTensor& t, int64_t rows, int64_t cols, WeightMatrix& w) {
    if (t.dtype != DType::MLX_AFFINE || t.bits != 4 || t.group_size <= 0 ||
        t.group_size % kQuantBlock || cols % t.group_size || !t.scales || !t.biases ||
        t.nbytes != size_t(rows * cols / 2))
        return false;
    const int64_t groups = cols / t.group_size;
    std::vector<uint16_t> d(size_t(rows * groups)), m(d.size());
    for (size_t i = 0; i < d.size(); ++i) {
        const float scale = load_float(t.scales, i, t.scale_dtype);
        const float bias = load_float(t.biases, i, t.scale_dtype);
        d[i] = f32_to_f16(scale);
        m[i] = f32_to_f16(bias);
        if (f16_to_f32(d[i]) != scale || f16_to_f32(m[i]) != bias) return false;
    }
    w = allocate(WType::Q4_1, rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* codes = t.data + size_t(r * cols / 2);  // code j: byte j/2, low nibble first
        auto* blocks = reinterpret_cast<BlockQ4_1*>(mutable_data(w) + size_t(r) * w.row_bytes);
        for (int64_t b = 0; b < cols / kQuantBlock; ++b) {
            const size_t gi = size_t(r * groups + b * kQuantBlock / t.group_size);
            blocks[b].d = d[gi];
            blocks[b].m = m[gi];
            const uint8_t* cb = codes + b * kQuantBlock / 2;
            auto code = [&](int j) { return uint8_t((cb[j / 2] >> (4 * (j % 2))) & 15); };
            for (int j = 0; j < 16; ++j) blocks[b].qs[j] = uint8_t(code(j) | (code(j + 16) << 4));
        }
    }
    return true;
}

WType resolve_target(WType target, DType source, int64_t cols) {
    WType type = target == WType::Native ? native_type(source) : target;
    if (wtype_row_bytes(type, cols) == 0) type = WType::F32;  // block type, cols % 32 != 0
    return type;
}

}  // namespace

void require_weight_memory(size_t bytes, const std::string& what) {
    // Memory is only backed when written, so a load that does not fit would otherwise be killed
    // by the kernel part-way through, with no word of why. Small matrices are not checked: a
    // /proc read per expert would cost more than it tells.
    constexpr size_t kCheckedBytes = size_t(64) << 20;
    if (bytes < kCheckedBytes) return;
    const MemoryInfo m = read_memory_info();
    require_memory(bytes, m.available + m.swap_free, "the " + what,
                   "a smaller weight type (--quant q4) needs less",
                   "MemAvailable + SwapFree in /proc/meminfo");
}

std::shared_ptr<void> allocate_weight_memory(size_t bytes, const std::string& what, bool zeroed) {
    const size_t align = bytes >= kHugePageBytes ? kHugePageBytes : 64;
    const size_t size = bytes == 0 ? align : (bytes + align - 1) / align * align;
    void* p = std::aligned_alloc(align, size);
    if (!p) fail("out of memory allocating ", size, " bytes for a ", what);
    if (align == kHugePageBytes) madvise(p, size, MADV_HUGEPAGE);  // a hint: failure changes nothing
    if (zeroed) std::memset(p, 0, size);
    return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

std::vector<float> tensor_to_f32(const RawTensor& t) {
    if (t.dtype == DType::U32 || t.dtype == DType::I32)
        fail(t.file, ": tensor '", t.name, "' has integer type ", dtype_name(t.dtype),
             " where floating-point weights are expected");
    std::vector<float> out(size_t(t.numel()));
    dequantize_to_f32(t, out.data());  // every float and block type, sizes checked there
    return out;
}

void encode_row_f32(const float* x, int64_t cols, WType type, uint8_t* dst) {
    switch (type) {
        case WType::F32: std::memcpy(dst, x, size_t(cols) * sizeof(float)); return;
        case WType::BF16:
        case WType::BF16D:
        case WType::F16:
            for (int64_t i = 0; i < cols; ++i) {
                const uint16_t h = type == WType::F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            return;
        case WType::Q8_0: quantize_row_q8_0(x, cols, reinterpret_cast<BlockQ8_0*>(dst)); return;
        case WType::Q4_0: quantize_row_q4_0(x, cols, reinterpret_cast<BlockQ4_0*>(dst)); return;
        case WType::Q4_1: quantize_row_q4_1(x, cols, reinterpret_cast<BlockQ4_1*>(dst)); return;
        case WType::Q8_0X:
        case WType::Q4_0X:
        case WType::Q4_1X:
        case WType::Q4_1FX:
        case WType::Q8_1FX:
        case WType::Q6_KX:
        case WType::Q4_0R:
        case WType::Q8_0R:
        case WType::Q4_KR:
        case WType::Q6_KR:
        case WType::Q5_KR:
        case WType::IQ4_NLR:
        case WType::MXFP4R:
        case WType::IQ4_XSR:
        case WType::Q3_KR:
        case WType::Q2_KR: fail("encode_row_f32: ", wtype_name(type), " is made by a repack");
        case WType::Native: fail("encode_row_f32: Native is not a storage type");
    }
}

WeightMatrix make_weight(const RawTensor& t, int64_t rows, int64_t cols, WType target,
                         const WeightBuild& how) {
    if (rows <= 0 || cols <= 0 || t.numel() != rows * cols)
        fail(t.file, ": tensor '", t.name, "' has shape ", t.shape_str(), ", expected [", rows,
             ", ", cols, "]");
    auto kernel_layout = [&](const WeightMatrix& w) {
        const WType to = int8_dot_type_for(w.type, how.row_groups);
        return how.int8_layout && to != w.type ? repack_for_int8_dot(w, to, how.pool) : w;
    };
    if (target == WType::Native || target == WType::Q4_1) {
        WeightMatrix w;
        if (repack_mlx4_as_q4_1(t, rows, cols, w)) return kernel_layout(w);
    }
    int64_t block_values = 0;
    size_t block_bytes = 0;
    if ((target == WType::Native || target == WType::Q8_0) && dtype_block_layout(t.dtype, &block_values, &block_bytes) &&
        block_values == kQuantBlock && cols % kQuantBlock == 0 &&
        t.nbytes == size_t(rows * cols / kQuantBlock) * block_bytes && has_q8_0_block_form(t)) {
        // Q5_0, IQ4_NL and MXFP4 blocks are int8 codes times an f16 scale: Q8_0 blocks.
        WeightMatrix w = allocate(WType::Q8_0, rows, cols);
        auto* blocks = reinterpret_cast<BlockQ8_0*>(mutable_data(w));
        for (int64_t b = 0; b < rows * cols / kQuantBlock; ++b)
            q8_0_block_form(t.dtype, t.data + size_t(b) * block_bytes, blocks[b].qs, &blocks[b].d);
        return kernel_layout(w);
    }
    const WType type = resolve_target(target, t.dtype, cols);
    if (same_layout(t.dtype, type)) {  // keep the file's bytes (rounding already done)
        WeightMatrix file_view;
        file_view.type = type;
        file_view.rows = rows;
        file_view.cols = cols;
        file_view.row_bytes = wtype_row_bytes(type, cols);
        file_view.data = t.data;
        if (t.nbytes < file_view.nbytes())
            fail(t.file, ": tensor '", t.name, "' holds ", t.nbytes, " bytes, its ",
                 dtype_name(t.dtype), " shape ", t.shape_str(), " needs ", file_view.nbytes());
        // The chunked layout is built straight from the mapped file, with no copy in between.
        if (how.int8_layout && int8_dot_type_for(type, how.row_groups) != type)
            return kernel_layout(file_view);
        return clone_weight(file_view, how.pool);
    }
    const WType built = how.int8_layout ? int8_dot_type_for(type, how.row_groups) : type;
    const TensorRows source(t);  // checks the type and sizes before any worker reads a row
    if (source.cols() != cols) {  // a shape whose last dimension is not the row (never a matrix)
        const std::vector<float> values = tensor_to_f32(t);
        return make_weight_f32(values.data(), rows, cols, built);
    }
    // Row by row on the pool: no f32 copy of the whole tensor is ever made.
    return build_weight(rows, cols, built, how.pool,
                        [&source](int64_t r, float* out) { source.read(r, out); });
}

WeightMatrix make_weight_f32(const float* values, int64_t rows, int64_t cols, WType target) {
    return build_weight(rows, cols, target, nullptr, [values, cols](int64_t r, float* out) {
        std::memcpy(out, values + r * cols, size_t(cols) * sizeof(float));
    });
}

WType stored_weight_type(WType type, int64_t cols) {
    if (type == WType::Native) return WType::F32;
    if (k_quant_dtype(type) != DType::F32 && cols % kKQuantValues) return WType::F32;  // no whole super-blocks
    return wtype_row_bytes(type, cols) ? type : WType::F32;
}

namespace {

// The matrix of `type` (Q4_KR, Q6_KR, Q5_KR, Q2_KR, Q4_1FX, Q6_KX, Q8_1FX) holding a GGUF K-quant tensor: its
// rows encoded into GGUF Q4_K / Q6_K / Q5_K blocks (kernels/quant_k.h) on `pool`, the whole matrix first (its
// repacks read a tensor), then repacked as a checkpoint's tensor of that type is (cols % 256 == 0).
WeightMatrix build_k_quant_weight(int64_t rows, int64_t cols, WType type, ThreadPool* pool, const RowFill& fill) {
    const DType source = k_quant_dtype(type);
    int64_t block_values = 0;
    size_t block_bytes = 0;
    dtype_block_layout(source, &block_values, &block_bytes);
    if (source == DType::Q3_K) fail("build_weight: no Q3_K quantizer (", wtype_name(type), " comes from a checkpoint's Q3_K)");
    const auto encode = source == DType::Q4_K   ? quantize_row_q4_k
                        : source == DType::Q5_K ? quantize_row_q5_k
                        : source == DType::Q2_K ? quantize_row_q2_k
                                                : quantize_row_q6_k;
    const size_t row_blocks = size_t(cols / block_values) * block_bytes;
    const std::string name = std::to_string(rows) + "x" + std::to_string(cols) + " " + dtype_name(source) + " weight";
    require_weight_memory(size_t(rows) * row_blocks + wtype_matrix_bytes(type, rows, cols), name);
    std::vector<uint8_t> blocks(size_t(rows) * row_blocks);  // [rows, cols / 256] GGUF blocks
    const int n_threads = pool ? pool->size() : 1;
    std::vector<std::vector<float>> values(static_cast<size_t>(n_threads), std::vector<float>(static_cast<size_t>(cols)));
    run_indexed_on(pool, rows, [&](int thread, int64_t begin, int64_t end) {
        float* row = values[size_t(thread)].data();  // [cols]
        for (int64_t r = begin; r < end; ++r) {
            fill(r, row);
            encode(row, cols, blocks.data() + size_t(r) * row_blocks);
        }
    });
    RawTensor t;
    t.name = name;
    t.dtype = source;
    t.shape = {rows, cols};
    t.data = blocks.data();
    t.nbytes = blocks.size();
    WeightMatrix w;
    if (!repack_k_quant_tensor(t, rows, cols, type, w, pool)) fail("build_weight: ", wtype_name(type), " from ", t.name, " failed");
    return w;
}

}  // namespace

WType k_quant_storage_type(DType d, RowGroupLayouts groups) {
    switch (d) {
        case DType::Q4_K: return groups.q4_k ? WType::Q4_KR : WType::Q4_1FX;
        case DType::Q5_K: return groups.q5_k ? WType::Q5_KR : WType::Q8_1FX;
        case DType::Q6_K: return groups.q6_k ? WType::Q6_KR : WType::Q6_KX;
        // Q3_K has no chunked form of its own: chunked, it is the Q6_K matrix with its values.
        case DType::Q3_K: return groups.q6_k ? WType::Q3_KR : WType::Q6_KX;
        case DType::Q2_K: return WType::Q2_KR;
        default: return WType::F32;
    }
}

bool repack_k_quant_tensor(const RawTensor& t, int64_t rows, int64_t cols, WType target, WeightMatrix& out,
                           ThreadPool* pool) {
    if (t.dtype == DType::Q3_K && target == WType::Q6_KX) {
        // Q3_K as the Q6_K tensor with the same values (q3_k_block_as_q6_k), then repacked as one.
        if (cols % kKQuantValues || rows * cols != t.numel() || t.nbytes != size_t(rows * cols / kKQuantValues) * kQ3KBlockBytes)
            return false;
        std::vector<uint8_t> q6_k(size_t(rows * cols / kKQuantValues) * kQ6KBlockBytes);  // the tensor's Q6_K blocks
        for (size_t b = 0; b < q6_k.size() / kQ6KBlockBytes; ++b)
            q3_k_block_as_q6_k(t.data + b * kQ3KBlockBytes, q6_k.data() + b * kQ6KBlockBytes);
        RawTensor as_q6_k = t;
        as_q6_k.dtype = DType::Q6_K;
        as_q6_k.data = q6_k.data();
        as_q6_k.nbytes = q6_k.size();
        return repack_q6_k_for_int8_dot(as_q6_k, rows, cols, out, pool);
    }
    if (t.dtype != k_quant_dtype(target)) return false;
    switch (target) {
        case WType::Q4_KR: return repack_q4_k_as_row_groups(t, rows, cols, out, pool);
        case WType::Q5_KR: return repack_q5_k_as_row_groups(t, rows, cols, out, pool);
        case WType::Q6_KR: return repack_q6_k_as_row_groups(t, rows, cols, out, pool);
        case WType::Q3_KR: return repack_q3_k_as_row_groups(t, rows, cols, out, pool);
        case WType::Q2_KR: return repack_q2_k_as_row_groups(t, rows, cols, out, pool);
        case WType::Q6_KX: return repack_q6_k_for_int8_dot(t, rows, cols, out, pool);
        default: return repack_affine_for_int8_dot(t, rows, cols, out, pool);  // Q4_1FX, Q8_1FX
    }
}

DType k_quant_dtype(WType t) {
    switch (t) {
        case WType::Q4_KR:
        case WType::Q4_1FX: return DType::Q4_K;
        case WType::Q6_KR:
        case WType::Q6_KX: return DType::Q6_K;
        case WType::Q3_KR: return DType::Q3_K;
        case WType::Q2_KR: return DType::Q2_K;
        case WType::Q5_KR:
        case WType::Q8_1FX: return DType::Q5_K;
        default: return DType::F32;
    }
}

WeightMatrix build_weight(int64_t rows, int64_t cols, WType type, ThreadPool* pool,
                          const RowFill& fill) {
    if (rows <= 0 || cols <= 0) fail("build_weight: bad shape [", rows, ", ", cols, "]");
    const WType stored = stored_weight_type(type, cols);
    if (k_quant_dtype(stored) != DType::F32) return build_k_quant_weight(rows, cols, stored, pool, fill);
    // An int8-dot type is encoded in its block type, row by row, and each row repacked.
    const bool repack = is_int8_dot_type(stored);
    const WType block = repack ? int8_dot_block_source(stored, "build_weight") : stored;
    // Every row is written whole, so the memory is not zeroed first: its pages are first
    // touched by the workers that fill them (in a VM a first touch is the dear part).
    WeightMatrix w = is_row_group_type(stored)
                         ? allocate_row_groups(stored, rows, cols, std::to_string(rows) + "x" + std::to_string(cols) + " weight")
                         : allocate(stored, rows, cols, /*zeroed=*/false);
    uint8_t* base = mutable_data(w);
    // Per-thread scratch, allocated here: nothing inside the pool allocates or throws.
    const int n_threads = pool ? pool->size() : 1;
    const size_t block_row_bytes = repack ? wtype_row_bytes(block, cols) : 0;
    std::vector<std::vector<float>> values(static_cast<size_t>(n_threads),
                                           std::vector<float>(static_cast<size_t>(cols)));
    std::vector<std::vector<uint8_t>> blocks(static_cast<size_t>(n_threads),
                                             std::vector<uint8_t>(block_row_bytes));
    auto work = [&](int thread, int64_t begin, int64_t end) {
        float* row = values[size_t(thread)].data();      // [cols]
        uint8_t* coded = blocks[size_t(thread)].data();  // [block_row_bytes]
        for (int64_t r = begin; r < end; ++r) {
            uint8_t* dst = base + size_t(r) * w.row_bytes;  // (row groups: row_groups_store_row places it)
            fill(r, row);
            if (repack) {
                encode_row_f32(row, cols, block, coded);
                if (is_row_group_type(stored))
                    row_groups_store_row(stored, coded, cols, r, base);
                else
                    repack_row_for_int8_dot(coded, block, cols, dst);
            } else {
                encode_row_f32(row, cols, stored, dst);
            }
        }
    };
    run_indexed_on(pool, rows, work);
    return w;
}

WeightMatrix clone_weight(const WeightMatrix& w, ThreadPool* pool) {
    WeightMatrix copy = allocate(w.type, w.rows, w.cols, /*zeroed=*/false);  // every byte copied
    if (copy.row_bytes != w.row_bytes) fail("clone_weight: unexpected row stride");
    uint8_t* dst = mutable_data(copy);
    // By stored rows (row groups: whole groups, padding included), each part a whole number of rows.
    auto rows = [&](int64_t begin, int64_t end) {
        std::memcpy(dst + size_t(begin) * w.row_bytes, w.data + size_t(begin) * w.row_bytes,
                    size_t(end - begin) * w.row_bytes);
    };
    run_on(pool, w.stored_rows(), rows);
    return copy;
}

void weight_row_f32(const WeightMatrix& w, int64_t row, float* out) {
    if (row < 0 || row >= w.rows) fail("row ", row, " out of range [0, ", w.rows, ")");
    const uint8_t* src = w.data + size_t(row) * w.row_bytes;
    switch (w.type) {
        case WType::F32: std::memcpy(out, src, size_t(w.cols) * 4); return;
        case WType::BF16:
        case WType::BF16D:
        case WType::F16:
            for (int64_t i = 0; i < w.cols; ++i) {
                uint16_t h;
                std::memcpy(&h, src + 2 * i, 2);
                out[i] = w.type == WType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
            }
            return;
        case WType::Q8_0:
            dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(src), w.cols, out);
            return;
        case WType::Q4_0:
            dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(src), w.cols, out);
            return;
        case WType::Q4_1:
            dequantize_row_q4_1(reinterpret_cast<const BlockQ4_1*>(src), w.cols, out);
            return;
        case WType::Q8_0X:
        case WType::Q4_0X:
        case WType::Q4_1X:
        case WType::Q4_1FX:
        case WType::Q8_1FX:
        case WType::Q6_KX:
        case WType::Q4_0R:
        case WType::Q8_0R:
        case WType::Q4_KR:
        case WType::Q6_KR:
        case WType::Q5_KR:
        case WType::IQ4_NLR:
        case WType::MXFP4R:
        case WType::IQ4_XSR:
        case WType::Q3_KR:
        case WType::Q2_KR: int8_dot_row_f32(w, row, out); return;
        case WType::Native: break;
    }
    fail("weight_row_f32: a WeightMatrix cannot have type ", wtype_name(w.type));
}

}  // namespace nextn
