// Attention's key scores for the avxvnni table: simd/key_scores.h over AVX2 vectors, with
// AVX-VNNI's vpdpbusd forming the integer steps of Q8_0 keys (the avx2 table widens their bytes to
// int16 for pmaddwd: about 8 instructions a step instead of one). F32 and F16 keys are the avx2
// table's.
#pragma GCC optimize("fp-contract=off")
#include <immintrin.h>

#include "kernels/simd/key_scores.h"
#include "kernels/x86/avx2/isa_avx2.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avxvnni {

namespace {

// The AVX2 description with the VEX dot product. In this unit's anonymous namespace, so that no
// template instantiated over it is merged with the avx2 unit's.
struct Isa : avx2::Isa {
    // acc + per int32 lane the sum of its 4 products u8 (u) x s8 (s), exact (vpdpbusd).
    static Vi dot_u8s8(Vi acc, Vi u, Vi s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
};

}  // namespace

void key_scores(WType type, const uint8_t* tiles, int64_t n, const float* q, int64_t R, int64_t d,
                float* out, int64_t ldo) {
    if (type == WType::Q8_0) return simd::q8_0_key_scores<Isa>(tiles, n, q, R, d, out, ldo);
    avx2::key_scores(type, tiles, n, q, R, d, out, ldo);
}

}  // namespace nextn::avxvnni
