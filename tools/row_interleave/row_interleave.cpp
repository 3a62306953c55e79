// Prototype (not in the engine): Q4_0 in a 16-row-interleaved layout (vector lanes = rows, so
// no horizontal reduction at the end of a row) against the library's gemm_i8_rows on the same
// Q4_0 values in its Q4_0X chunk layout. README ("A layout that removes the reduction") has the
// figures and what bringing it into the engine needs.
//   tools/row_interleave/row_interleave.sh ROWS COLS WIDTH [THREADS]
//   256 1024 4: L2-resident; 262144 1024 1 2: streamed from memory past the L3 on both threads
//   (THREADS default 1, each thread a contiguous share of the rows).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/weight.h"
#include "core/thread_pool.h"

using namespace nextn;

// Row groups per single-column tile, and how many tiles ahead a tile fetches: one group two
// ahead streamed fastest (four groups one ahead took 1.23x the current kernel's time).
constexpr int RG1 = 1;
template <int RG, int C>
constexpr int kTilesAhead = C == 1 ? 2 : 1;

static inline __m512i hi_nib(__m512i v, __m512i m) {
    __m512i hi;
    asm("vgf2p8affineqb $0, %2, %1, %0" : "=v"(hi) : "v"(v), "v"(m));
    return hi;
}

// RG groups of 16 rows x C columns. codes: [groups, blocks, 4, 64] (vector i, lane r: bytes
// 4i..4i+3 of row r's Q4_0 block, low nibble element e, high nibble e + 16); scales: [groups,
// blocks, 16] f16 (in the prototype a plane apart from the codes; in the engine a group's scales
// would follow its codes). x: the activations as the library quantizes them, columns j0..j0+C-1;
// block b's elements 16h + 4i..16h + 4i + 3 are chunk step 4h + i, lane b % 16, so a step
// broadcasts those 4 bytes. y[c * ldy + r]: lane r of column c. fetch: this tile prefetches the
// tile kTilesAhead after it (the first column group only).
template <int RG, int C>
__attribute__((noinline)) void tileB(const uint8_t* codes, const uint16_t* scales, int blocks, const QuantizedColumns& x,
                                     int64_t j0, float* y, long ldy, bool fetch) {
    const __m512i lowm = _mm512_set1_epi8(15);
    const __m512i shm = _mm512_set1_epi64(0x1020408000000000LL);
    __m512 facc[RG][C];
    for (int r = 0; r < RG; ++r) for (int c = 0; c < C; ++c) facc[r][c] = _mm512_setzero_ps();
    const long gstride = long(blocks) * 256;
    const uint8_t* pf = codes + long(RG) * gstride * (kTilesAhead<RG, C>);
    const uint16_t* pfs = scales + long(RG) * blocks * 16 * (kTilesAhead<RG, C>);
    for (int b = 0; b < blocks; ++b) {
        if (fetch) {
#pragma GCC unroll 8
            for (int r = 0; r < RG; ++r) {
                const uint8_t* p = pf + r * gstride + long(b) * 256;
                _mm_prefetch((const char*)p, _MM_HINT_T0);
                _mm_prefetch((const char*)p + 64, _MM_HINT_T0);
                _mm_prefetch((const char*)p + 128, _MM_HINT_T0);
                _mm_prefetch((const char*)p + 192, _MM_HINT_T0);
                if (b % 2 == 0) _mm_prefetch((const char*)(pfs + (r * long(blocks) + b) * 16), _MM_HINT_T0);
            }
        }
        __m512i isum[RG][C];
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            const __m512i st = _mm512_set1_epi32(-8 * x.sums_of(j0 + c)[b]);  // Q4_0's offset of 8
#pragma GCC unroll 8
            for (int r = 0; r < RG; ++r) isum[r][c] = st;
        }
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                __m512i xs[C];
#pragma GCC unroll 8
                for (int c = 0; c < C; ++c) {
                    int32_t w;
                    std::memcpy(&w, x.codes_of(j0 + c) + (b / 16) * kI8ChunkValues + (4 * half + i) * 64 + 4 * (b % 16), 4);
                    xs[c] = _mm512_set1_epi32(w);
                }
#pragma GCC unroll 8
                for (int r = 0; r < RG; ++r) {
                    const __m512i v = _mm512_load_si512(codes + r * gstride + long(b) * 256 + i * 64);
                    const __m512i code = half == 0 ? _mm512_and_si512(v, lowm) : hi_nib(v, shm);
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c) isum[r][c] = _mm512_dpbusd_epi32(isum[r][c], code, xs[c]);
                }
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < RG; ++r) {
            const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(scales + (r * long(blocks) + b) * 16)));
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c)
                facc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][c]), _mm512_mul_ps(dw, _mm512_set1_ps(x.scales_of(j0 + c)[b])), facc[r][c]);
        }
    }
    for (int r = 0; r < RG; ++r) for (int c = 0; c < C; ++c) _mm512_storeu_ps(y + c * ldy + r * 16, facc[r][c]);
}

// Column groups of up to C inside each block of 16 * RG rows (the weights stay in cache between
// the groups, as int8_dot_rows does it); only the first group fetches ahead.
template <int RG, int C>
void gemmB(int blocks, const uint8_t* codes, const uint16_t* scales, const QuantizedColumns& x, float* y, long ldy,
           int g0, int g1) {
    const int n = int(x.n);
    for (int g = g0; g < g1; g += RG)
        for (int j0 = 0; j0 < n; j0 += C) {
            const uint8_t* cg = codes + long(g) * blocks * 256;
            const uint16_t* sg = scales + long(g) * blocks * 16;
            float* yg = y + j0 * ldy + g * 16;
            switch (std::min(C, n - j0)) {
                case 4: if constexpr (C >= 4) tileB<RG, 4>(cg, sg, blocks, x, j0, yg, ldy, j0 == 0); break;
                case 3: if constexpr (C >= 3) tileB<RG, 3>(cg, sg, blocks, x, j0, yg, ldy, j0 == 0); break;
                case 2: if constexpr (C >= 2) tileB<RG, 2>(cg, sg, blocks, x, j0, yg, ldy, j0 == 0); break;
                default: tileB<RG, 1>(cg, sg, blocks, x, j0, yg, ldy, j0 == 0); break;
            }
        }
}

int main(int argc, char** argv) {
    const int rows = argc > 1 ? atoi(argv[1]) : 256, K = argc > 2 ? atoi(argv[2]) : 1024;
    const int n = argc > 3 ? atoi(argv[3]) : 4, reps = rows > 4096 ? 200 : 3000;  // streamed: about 1 ms a call
    const int threads = argc > 4 ? atoi(argv[4]) : 1;
    // Tiles of several columns take 2 groups of 16 rows; blocks are 32 values.
    if (rows <= 0 || rows % 32 || K <= 0 || K % 32 || n < 1 || n > 16 || threads < 1) {
        std::fprintf(stderr, "row_interleave: ROWS must be a positive multiple of 32, COLS of 32, WIDTH 1..16, "
                             "THREADS >= 1\n");
        return 2;
    }
    ThreadPool pool(threads);
    // Each thread a contiguous share of the 16-row groups, an even number of them.
    auto share = [&](int64_t t, int* g0, int* g1) {
        const int groups_per = (rows / 16 / threads + 1) / 2 * 2;
        *g0 = std::min(rows / 16, int(t) * groups_per);
        *g1 = t + 1 == threads ? rows / 16 : std::min(rows / 16, *g0 + groups_per);
    };
    const int blocks = K / 32, groups = rows / 16;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<float> wf(size_t(rows) * K);
    for (auto& f : wf) f = d(rng);
    // One Q4_0 matrix: today's layout is the library's repack of it, the prototype's is built
    // from the same blocks below.
    const WeightMatrix w4 = make_weight_f32(wf.data(), rows, K, WType::Q4_0);
    const WeightMatrix wa = repack_for_int8_dot(w4);
    auto block = [&](int r, int b) -> const BlockQ4_0& {
        return reinterpret_cast<const BlockQ4_0*>(w4.data + size_t(r) * w4.row_bytes)[b];
    };
    std::vector<uint8_t> codes(size_t(groups) * blocks * 256 + 64);
    uint8_t* cb = (uint8_t*)(((uintptr_t)codes.data() + 63) & ~uintptr_t(63));
    std::vector<uint16_t> scales(size_t(groups) * blocks * 16 + 32);
    uint16_t* sb = (uint16_t*)(((uintptr_t)scales.data() + 63) & ~uintptr_t(63));
    for (int g = 0; g < groups; ++g)
        for (int b = 0; b < blocks; ++b) {
            for (int i = 0; i < 4; ++i)
                for (int l = 0; l < 16; ++l)
                    std::memcpy(cb + ((long(g) * blocks + b) * 4 + i) * 64 + l * 4, block(g * 16 + l, b).qs + 4 * i, 4);
            for (int l = 0; l < 16; ++l) sb[(long(g) * blocks + b) * 16 + l] = block(g * 16 + l, b).d;
        }
    std::vector<float> x(size_t(n) * K);
    for (auto& f : x) f = d(rng);
    QuantizedColumns qc;
    resize_columns(n, K, qc);
    kernels().quantize_columns(x.data(), K, qc, 0, n);
    std::vector<float> ya(size_t(n) * rows), yb(size_t(n) * rows);
    auto runA = [&] {
        pool.run(threads, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) {
                int g0, g1;
                share(t, &g0, &g1);
                kernels().gemm_i8_rows(wa, qc, ya.data(), rows, 16 * g0, std::min(rows, 16 * g1));
            }
        });
    };
    auto runB = [&] {
        pool.run(threads, [&](int64_t t0, int64_t t1) {
            for (int64_t t = t0; t < t1; ++t) {
                int g0, g1;
                share(t, &g0, &g1);
                if (n == 1)
                    gemmB<RG1, 1>(blocks, cb, sb, qc, yb.data(), rows, g0, g1);
                else  // groups of 4 columns (the last one narrower), 2 row groups a tile
                    gemmB<2, 4>(blocks, cb, sb, qc, yb.data(), rows, g0, g1);
            }
        });
    };
    runA(); runB();
    double maxrel = 0;
    for (size_t i = 0; i < ya.size(); ++i) maxrel = std::max(maxrel, double(std::fabs(ya[i] - yb[i]) / (std::fabs(ya[i]) + 1e-3)));
    std::vector<double> t[2];
    for (int i = 0; i < 2 * reps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < 16; ++k) { if (i % 2) runB(); else runA(); }
        t[i % 2].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 16);
    }
    double m[2];
    for (int k = 0; k < 2; ++k) { std::sort(t[k].begin(), t[k].end()); m[k] = t[k][t[k].size() / 50]; }
    std::printf("%d x %d n=%d, %d thread(s): current %.2f us, row-interleaved %.2f us, ratio %.3f (max rel diff %.2e)\n", rows, K, n, threads,
                m[0] * 1e6, m[1] * 1e6, m[1] / m[0], maxrel);
}
