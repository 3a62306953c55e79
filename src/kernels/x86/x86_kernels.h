#pragma once
// Entry points of the x86 kernel translation units. Each ISA namespace is compiled with its own
// flags (x86/avx2/: AVX2+FMA+F16C; x86/avx512/: adds AVX-512 F/BW/VL/DQ/VNNI) and must only
// run after cpu_supports_*() said yes. The tables themselves are assembled in dispatch.cpp (a
// generic translation unit) so that no inline code is ever emitted with ISA flags and shared.
#include <cstdint>

#include "kernels/int8_dot.h"
#include "kernels/weight.h"

namespace nextn::x86 {

// CPU (and OS register-state) support for everything the ISA's translation units are built with.
bool cpu_supports_avx2();
bool cpu_supports_avxvnni();
bool cpu_supports_avx512();
// AVX512_BF16 on top of cpu_supports_avx512 (x86/avx512bf16/ is built with both).
bool cpu_supports_avx512bf16();
// AMX tiles with int8 dot products on top of cpu_supports_avx512 (x86/amx/ is built with both),
// once Linux has granted this process the tile data state (asked for on the first call).
bool cpu_supports_amx_int8();

// This thread's scratch of at least `bytes`, 64-byte aligned, kept between calls (a prefill
// allocates it once): where a prefill's row-group tiles unpack a tile's codes or scales once for
// all their column passes. Each call may move it; a caller holds one at a time.
uint8_t* tile_scratch(int64_t bytes);

}  // namespace nextn::x86

// Same signatures as KernelTable (kernels/kernels.h).
namespace nextn::avx2 {

void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
               int64_t r0, int64_t r1);
// The int8-dot kernels with pmaddubsw (no AVX-VNNI needed): the chunked types (x86/int8_dot_256.h)
// and the row-group types Q4_0R / Q8_0R (x86/row_groups_256.h).
void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1);
void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1);
void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y);
void l2norm(const float* x, int64_t n_rows, int64_t d, float eps, float* y);
void silu(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void swiglu(const float* gate, const float* up, float* y, int64_t n);
void softmax(float* x, int64_t n_rows, int64_t d);
void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo);
void weighted_rows(const float* p, int64_t ldp, int64_t G, const float* v, int64_t ldv, int64_t n,
                   int64_t d, float* out, bool accumulate);
void weighted_rows_f16(const float* p, int64_t ldp, int64_t G, const uint16_t* v, int64_t ldv,
                       int64_t n, int64_t d, float* out, bool accumulate);
void weighted_rows_q8_0(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv_bytes,
                        int64_t n, int64_t d, float* out, bool accumulate);
void causal_conv(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                 float* out, int64_t ld_out);
void rope_neox(float* x, int64_t n, int64_t stride, int64_t half, const float* cos, const float* sin);
void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1);
float stream_sum(const float* x, int64_t n);
void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc);
void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc);

}  // namespace nextn::avx2

// x86/avxvnni/ (AVX2 + AVX-VNNI flags): the int8-dot kernels and q8_0 key scores for the avx2
// table on CPUs that have the VEX dot products.
namespace nextn::avxvnni {

// The chunked and the row-group types, as the avx2 unit's.
void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1);
void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1);
void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc);
// Q8_0 keys with vpdpbusd; F32 and F16 keys as avx2::key_scores.
void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo);

}  // namespace nextn::avxvnni

namespace nextn::avx512 {

// Whether narrow matmuls should split their rows with shared tails on this CPU (the table's
// share_narrow_tails): on AMD family 1Ah (Zen 5), where it was measured.
bool shares_narrow_tails_on_this_cpu();
// Whether RowGroupFetch::ForThisCpu is the cursor at decode widths on this CPU (AMD) rather than
// group streams.
bool prefetches_cursor_on_this_cpu();
void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
               int64_t r0, int64_t r1);
void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1);
// Choices gemm_i8_rows makes for this CPU, which a test may force so that one machine reaches
// every variant: the single-column tile height (2, 4 or 8 rows; 0: its pick for the CPU and row
// length), whether 4-bit tiles may unpack nibbles with GFNI (used only where the CPU has it) and
// whether a verify width may run as one pass of tiles that wide (where this CPU does) rather
// than in column groups.
struct Int8TileChoice {
    int tile_rows = 0;
    bool gfni = true;
    bool one_pass = true;
};
// How the row-group kernel prefetches (gemm_row_groups_avx512.cpp's header): what was measured
// best for this CPU and width, or one way forced (tests reach both ways on any CPU with it).
enum class RowGroupFetch {
    ForThisCpu,          // AMD: Cursor; elsewhere: NarrowGroupStreams
    Cursor,              // one cursor over the call's bytes
    GroupStreams,        // two groups a tile, each prefetched ahead of its own reads
    NarrowGroupStreams,  // GroupStreams up to 16 columns (decode, verify), Cursor above; on Zen 5
                         // HardwareStream where gemm_row_groups_avx512.cpp's header says
    HardwareStream,      // one group a tile, read in order, no software prefetch after the call's
                         // first lines (a group is one stream: kernels/row_groups.h)
};
// The row-group types (Q4_0R, Q8_0R, Q4_KR, Q5_KR, Q6_KR: kernels/row_groups.h) for rows [r0, r1);
// gemm_i8_rows sends those types here. gfni: unpack the 4-bit types' high nibbles with GFNI
// (the caller checks that the CPU has it).
void gemm_row_groups(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                     int64_t r0, int64_t r1, bool gfni, RowGroupFetch fetch = RowGroupFetch::ForThisCpu);
// gemm_i8_rows with the row-group types' prefetch fixed (the chunked types as gemm_i8_rows):
// Cursor at every width, or NarrowGroupStreams. The tables NEXTN_ROW_GROUP_FETCH asks for, and
// the alternative the model times on AMD (kernels/kernels.h, KernelTable::timed_alternative).
void gemm_i8_rows_cursor(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                         int64_t r0, int64_t r1);
void gemm_i8_rows_group_streams(const WeightMatrix& w, const QuantizedColumns& x, float* y,
                                int64_t ldy, int64_t r0, int64_t r1);
void gemm_i8_rows_with(const Int8TileChoice& choice, const WeightMatrix& w, const QuantizedColumns& x, float* y,
                       int64_t ldy, int64_t r0, int64_t r1);
void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1);
void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y);
void l2norm(const float* x, int64_t n_rows, int64_t d, float eps, float* y);
void silu(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void swiglu(const float* gate, const float* up, float* y, int64_t n);
void softmax(float* x, int64_t n_rows, int64_t d);
void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo);
void weighted_rows(const float* p, int64_t ldp, int64_t G, const float* v, int64_t ldv, int64_t n,
                   int64_t d, float* out, bool accumulate);
void weighted_rows_f16(const float* p, int64_t ldp, int64_t G, const uint16_t* v, int64_t ldv,
                       int64_t n, int64_t d, float* out, bool accumulate);
void weighted_rows_q8_0(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv_bytes,
                        int64_t n, int64_t d, float* out, bool accumulate);
void causal_conv(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                 float* out, int64_t ld_out);
void rope_neox(float* x, int64_t n, int64_t stride, int64_t half, const float* cos, const float* sin);
void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1);
float stream_sum(const float* x, int64_t n);
void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc);
void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc);

}  // namespace nextn::avx512

// x86/avx512bf16/ (the avx512 flags plus AVX512_BF16): the bf16-dot GEMM of the avx512 table on
// CPUs that have it (kernels/bf16_dot.h).
namespace nextn {
struct Bf16Columns;  // kernels/bf16_dot.h
}  // namespace nextn

namespace nextn::avx512bf16 {

void gemm_bf16_rows(const WeightMatrix& w, const Bf16Columns& x, float* y, int64_t ldy,
                    int64_t r0, int64_t r1);
void bf16_peak_probe(const uint16_t* a, const uint16_t* b, int64_t reps, float* acc);

}  // namespace nextn::avx512bf16

// x86/amx/ (the avx512 flags plus AMX-TILE and AMX-INT8): the row-group types' matmul for wide
// batches in the avx512 table on CPUs that have it.
namespace nextn::amx {

// Q4_0R and Q8_0R for rows [r0, r1), every column of x, 16 tokens per tile dot product; the same
// bits as avx512::gemm_row_groups and ref::gemm_row_groups.
void gemm_row_groups(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                     int64_t r0, int64_t r1);

}  // namespace nextn::amx
