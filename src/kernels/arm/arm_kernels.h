#pragma once
// The 64-bit ARM kernels (aarch64 builds only: CMakeLists.txt's NEXTN_ARM_KERNELS) and the table
// dispatch.cpp chooses from them. The files under neon/ are baseline Armv8-A (NEON is part of
// every aarch64 CPU); each file under dotprod/ is compiled for Armv8.2-A with the dot-product
// extension (SDOT), so it may run only after cpu_supports_dotprod() said yes.
#include "kernels/kernels.h"

namespace nextn::arm {

// Whether the CPU has Armv8.2-A's int8 dot product (the kernel's HWCAP_ASIMDDP; Linux only:
// elsewhere false).
bool cpu_supports_dotprod();

// The reference table with the f32 matmul and the int8-dot matmul (kernels/int8_dot.h, the
// chunked and the 16-row-group types) on baseline NEON, which every aarch64 CPU has: with the
// int8 kernel, Q8_0, Q4_0, Q4_1 and the GGUF K-quant / MLX affine codes stay compact instead of
// being widened to f32.
const KernelTable* neon_table();
// neon_table() with the int8-dot matmul on SDOT.
const KernelTable* dotprod_table();

namespace neon {
// gemm_rows (kernels.h): F32, BF16, F16 and the block types with f32 activations.
void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy, int64_t r0,
               int64_t r1);
void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1);
void gdn_recurrence_heads(const float* state_in, float* state_out, int64_t out_stride,
                          const float* q, const float* k, const float* v, const float* g,
                          const float* beta, int64_t T, int Hk, int Hv, int Dk, int Dv,
                          bool tiled_heads, float* out, int j0, int j1);
float stream_sum(const float* x, int64_t n);
void fma_peak_probe(const float* a, const float* b, int64_t reps, float* acc);
void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc);
// The activation quantizer for the int8 matmuls (quantize_neon.cpp).
void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1);
// Norms, activations, the conv, RoPE, softmax, attention (kernels.h; ops_neon.cpp).
void rmsnorm(const float* x, const float* w, int64_t n_rows, int64_t d, float eps, float* y);
void l2norm(const float* x, int64_t n_rows, int64_t d, float eps, float* y);
void silu(const float* x, float* y, int64_t n);
void sigmoid(const float* x, float* y, int64_t n);
void swiglu(const float* gate, const float* up, float* y, int64_t n);
void softmax(float* x, int64_t n_rows, int64_t d);
void causal_conv(const float* x, const float* w, int64_t ld, int64_t T, int64_t C, int K,
                 float* out, int64_t ld_out);
void rope_neox(float* x, int64_t n, int64_t stride, int64_t half, const float* cos,
               const float* sin);
void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo);
void weighted_rows(const float* p, int64_t ldp, int64_t G, const float* v, int64_t ldv, int64_t n,
                   int64_t d, float* out, bool accumulate);
void weighted_rows_f16(const float* p, int64_t ldp, int64_t G, const uint16_t* v, int64_t ldv,
                       int64_t n, int64_t d, float* out, bool accumulate);
void weighted_rows_q8_0(const float* p, int64_t ldp, int64_t G, const uint8_t* v, int64_t ldv_bytes,
                        int64_t n, int64_t d, float* out, bool accumulate);
}  // namespace neon

namespace dotprod {
// ref::gemm_i8_rows' bits (kernels/int8_dot.h) for the chunked and the row-group types.
void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1);
void int8_peak_probe(const uint8_t* a, const int8_t* b, int64_t reps, int32_t* acc);
// The neon table's key scores with the Q8_0 keys' dot products on SDOT.
void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo);
}  // namespace dotprod

}  // namespace nextn::arm
