// AVX2 small-N GEMM: instantiates the shared tile (x86/gemm_tile.h) for every weight type.
#pragma GCC optimize("fp-contract=off")
#include "kernels/x86/avx2/isa_avx2.h"
#include "kernels/x86/gemm_tile.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx2 {

void gemm_rows(const WeightMatrix& w, const float* x, int64_t n, float* y, int64_t ldy,
               int64_t r0, int64_t r1) {
    switch (w.type) {
        case WType::F32: return x86::gemm_rows_impl<Isa, DecodeF32>(w, x, n, y, ldy, r0, r1);
        case WType::BF16: return x86::gemm_rows_impl<Isa, DecodeBF16>(w, x, n, y, ldy, r0, r1);
        case WType::F16: return x86::gemm_rows_impl<Isa, DecodeF16>(w, x, n, y, ldy, r0, r1);
        case WType::Q8_0: return x86::gemm_rows_impl<Isa, DecodeQ8_0>(w, x, n, y, ldy, r0, r1);
        case WType::Q4_0: return x86::gemm_rows_impl<Isa, DecodeQ4_0>(w, x, n, y, ldy, r0, r1);
        case WType::Q4_1: return x86::gemm_rows_impl<Isa, DecodeQ4_1>(w, x, n, y, ldy, r0, r1);
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
        case WType::Q2_KR: break;  // matmul() sends these to gemm_i8_rows (int8 activations)
        case WType::BF16D: break;   // matmul() sends these to gemm_bf16_rows (bf16 activations)
        case WType::Native: break;  // rejected by matmul() before any kernel runs
    }
}

}  // namespace nextn::avx2
