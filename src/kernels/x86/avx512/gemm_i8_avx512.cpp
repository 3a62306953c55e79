// AVX-512 VNNI: the chunked int8-dot weight types (Q8_0X, Q4_0X, Q4_1X, Q4_1FX, Q8_1FX, Q6_KX) times
// int8 activations, and the activation quantizer (layout and arithmetic: kernels/int8_dot.h).
// A tile is R rows x C columns; each 64-byte code step of a row is loaded once and meets every
// column of the tile with one vpdpbusd, so weights stream once per C columns, and the 16 blocks
// of a chunk are scaled by one convert + fma per (row, column).
#pragma GCC optimize("fp-contract=off")
#include <limits>

#include "kernels/int8_dot.h"
#include "kernels/row_groups.h"
#include "kernels/x86/avx512/isa_avx512.h"
#include "kernels/x86/int8_dot_tiles.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512 {

namespace {

// y[c * ldy + r] = the sum of acc[r][c]'s lanes. Tiles of several columns (verify and prefill,
// bound by compute) reduce four rows at a time (hsum4): kernels_bench BM_GemmCached, 1024 x 1024
// at width 4 (2 chunks a row, so the epilogue is a large share of a tile), fastest of 3 runs
// each: q8_0 20.5-20.8 -> 18.5 us, q4_0 20.9-21.1 -> 20.5-20.6. Single-column tiles (decode,
// bound by memory) keep one hsum a sum: there hsum4 changed nothing cached, and kernel_ab's
// 0.8B q4_0 decode with it, 1.01-1.04x the time, is within that tool's spread (A/A runs
// 0.99-1.02, once 1.055), so nothing argued for it.
template <int R, int C>
[[gnu::always_inline]] inline void store_sums(const __m512 (&acc)[R][C], float* y, int64_t ldy) {
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        int r = 0;
        if constexpr (C > 1)
#pragma GCC unroll 8
            for (; r + 4 <= R; r += 4)
                _mm_storeu_ps(y + c * ldy + r, Isa::hsum4(acc[r][c], acc[r + 1][c], acc[r + 2][c], acc[r + 3][c]));
#pragma GCC unroll 8
        for (; r < R; ++r) y[c * ldy + r] = Isa::hsum(acc[r][c]);
    }
}

// Which tile after this one a 4-bit tile of several columns fetches. It spends two dot products
// per code step and column, so it computes long enough per byte that on Zen 4 fetching only the
// next tile left it waiting on memory: kernel_ab, 0.8B q4_0 forwards at width 2, 3, 4, 8 took
// 0.956, 0.925, 0.957, 0.956x the time fetching two ahead (three ahead: 1.013, 0.915, 0.942,
// 0.960). On a Xeon (Granite Rapids-class VM) two ahead is the slower: one ahead took 0.968,
// 0.969, 0.973-0.977, 0.984x the time of two (three ahead 1.044-1.047x at width 4), prefill 128
// and decode unchanged. So two on AMD, one elsewhere. Eight-bit tiles did not gain from two
// (Zen 4, width 2 and 4: 1.05x), nor single columns, which stream at the memory's rate already.
int four_bit_multi_column_tiles_ahead() { return x86::tiles_tuned_as_amd() ? 2 : 1; }

// What a tile is compiled for, picked once per matmul call (gemm_i8_tiles). Template
// parameters, not run-time flags: as a run-time flag the streaming branches cost the 8-bit 4 x 4
// tile of a prefill registers, prefill 128 q8_0 1.10x the time.
struct TileOptions {
    bool stream = false;  // prefetch line by line (x86::StreamPrefetch), not in bursts
    bool gfni = false;    // 4-bit types: the high nibbles by GFNI (high_nibbles)
};

// high_nibbles (isa_avx512.h): a 4-bit tile spends 3 vector operations a code line on unpacking
// against 2 dot products per column, so at 4 columns (a width-4 verify) GFNI's one instruction
// instead of a shift and a mask is one operation in 11.

template <WType T, int R, int C, TileOptions O>
void tile(const uint8_t* const* wrow, const x86::TilePrefetchPlan& plan, int64_t chunks, size_t d_off,
          size_t m_off, const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    constexpr int64_t kChunkBytes = int8_dot_chunk_code_bytes(T);
    const __m512i low_nibbles = _mm512_set1_epi8(15);
    const __m512i shift_matrix = _mm512_set1_epi64(kHighNibblesToLow);
    __m512 acc[R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    const int8_t* xc[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) xc[c] = x.codes_of(j0 + c);
    const int tiles_ahead = !int8_dot_eight_bit(T) && C > 1 ? four_bit_multi_column_tiles_ahead() : 1;
    x86::NextTilePrefetch<> prefetch(plan, wrow, j0, {}, tiles_ahead);
    const x86::StreamPrefetch<O.stream> stream(plan, j0);

    for (int64_t ch = 0; ch < chunks; ++ch) {
        const int64_t xoff = ch * kI8ChunkValues, boff = ch * kI8ChunkBlocks;
        prefetch.at_chunk(ch);
        // The integer sums start at the offsets' corrections (per column, shared by the rows)
        // rather than at zero with the corrections added after the dot products: one add per
        // (row, column) and chunk fewer. kernel_ab against adding them after, 0.8B forwards:
        // prefill 128 0.96-1.00x the time (q8_0) and 0.93-1.02x (q4_0), decode 0.97-1.00x,
        // width 4 q8_0 0.92-1.01x. The 4-bit 4 x 4 tile had run 1.04-1.12x the time so, but
        // with GFNI's unpacking it gains too (l2 resident, one thread: 0.95x the time with
        // GFNI alone, 0.89x with both).
        __m512i isum[R][C];
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            const __m512i st = x86::chunk_start<Isa, T, 0>(_mm512_loadu_si512(x.sums_of(j0 + c) + boff));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) isum[r][c] = st;
        }
        if constexpr (int8_dot_eight_bit(T)) {
#pragma GCC unroll 8
            for (int s = 0; s < kI8Steps; ++s) {
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    const uint8_t* p = wrow[r] + ch * kChunkBytes + s * 64;
                    stream.line(p);
                    const __m512i w = _mm512_load_si512(p);
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c)
                        isum[r][c] = _mm512_dpbusd_epi32(
                            isum[r][c], w, _mm512_loadu_si512(xc[c] + xoff + s * 64));
                }
            }
        } else {
            // A code line's low nibbles meet every column, then its high nibbles (the line is
            // loaded twice, from L1). Taking both at once kept two activation vectors a column
            // live, and at 4 columns, with the 16 integer sums, that overflowed the registers:
            // the 4 x 4 tile spilled sums in every step. Measured on Zen 5 (kernel_ab, 0.8B
            // q4_0 forwards, against both at once): width 4 0.96-0.98x the time, width 3
            // 0.87-0.99x, width 8 0.90x, prefill 128 0.98x, 2B width 4 0.97x; width 1
            // 0.985-0.991x and width 2 1.00x (2B width 1 1.01x), where nothing had spilled.
#pragma GCC unroll 4
            for (int k = 0; k < kI8Steps / 2; ++k) {
#pragma GCC unroll 2
                for (int half = 0; half < 2; ++half) {
                    __m512i xs[C];
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c) xs[c] = _mm512_loadu_si512(xc[c] + xoff + (2 * k + half) * 64);
#pragma GCC unroll 8
                    for (int r = 0; r < R; ++r) {
                        const uint8_t* p = wrow[r] + ch * kChunkBytes + k * 64;
                        if (half == 0) stream.line(p);
                        const __m512i v = _mm512_load_si512(p);
                        const __m512i code = half == 0 ? _mm512_and_si512(v, low_nibbles)
                                                       : high_nibbles<O.gfni>(v, low_nibbles, shift_matrix);
#pragma GCC unroll 8
                        for (int c = 0; c < C; ++c) isum[r][c] = _mm512_dpbusd_epi32(isum[r][c], code, xs[c]);
                    }
                }
            }
        }
        if (ch == chunks - 1) stream.planes(wrow, R, d_off);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            __m512 dw, dm = _mm512_setzero_ps();
            if constexpr (int8_dot_f32_scales(T)) {  // f32 scales and offsets
                dw = _mm512_load_ps(reinterpret_cast<const float*>(wrow[r] + d_off) + boff);
                dm = _mm512_load_ps(reinterpret_cast<const float*>(wrow[r] + m_off) + boff);
            } else {  // f16
                dw = _mm512_cvtph_ps(_mm256_load_si256(
                    reinterpret_cast<const __m256i*>(wrow[r] + d_off + boff * 2)));
                if constexpr (T == WType::Q4_1X)
                    dm = _mm512_cvtph_ps(_mm256_load_si256(
                        reinterpret_cast<const __m256i*>(wrow[r] + m_off + boff * 2)));
            }
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) {
                const __m512 dx = _mm512_loadu_ps(x.scales_of(j0 + c) + boff);
                const __m512i xsum = _mm512_loadu_si512(x.sums_of(j0 + c) + boff);
                acc[r][c] = x86::scale_chunk<Isa, T>(isum[r][c], xsum, dw, dm, dx, acc[r][c]);
            }
        }
    }
    store_sums<R, C>(acc, y + j0 * ldy, ldy);
}

// Q6_KX, R rows x C columns: each chunk's 8 code steps are rebuilt once per row from the
// low-nibble and high-bit planes and meet every column; steps 0..3 and 4..7 (the blocks' two
// sub-blocks, each with its own scale) sum separately.
template <int R, int C, TileOptions O>
void tile_q6(const uint8_t* const* wrow, const x86::TilePrefetchPlan& plan, int64_t chunks, size_t d_off,
             size_t sc_off, const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    constexpr int64_t kChunkBytes = int8_dot_chunk_code_bytes(WType::Q6_KX);
    __m512 acc[R][C];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    const int8_t* xc[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) xc[c] = x.codes_of(j0 + c);
    x86::NextTilePrefetch<> prefetch(plan, wrow, j0);
    const x86::StreamPrefetch<O.stream> stream(plan, j0);

    for (int64_t ch = 0; ch < chunks; ++ch) {
        const int64_t xoff = ch * kI8ChunkValues, boff = ch * kI8ChunkBlocks;
        prefetch.at_chunk(ch);
        __m512i start[C][2];  // the sub-block sums' starts, shared by the rows
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            const __m512i xsum = _mm512_loadu_si512(x.sums_of(j0 + c) + boff);
            const __m512i xhalf = _mm512_loadu_si512(x.half_sums_of(j0 + c) + boff);
            start[c][0] = x86::q6_start_first<Isa>(xhalf);
            start[c][1] = x86::q6_start_second<Isa>(xsum, xhalf);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const uint8_t* p = wrow[r] + ch * kChunkBytes;
            __m512i lo[4], hi[2];
#pragma GCC unroll 6
            for (int k = 0; k < 6; ++k) stream.line(p + k * 64);  // 4 low-nibble, 2 high-bit lines
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) lo[k] = _mm512_load_si512(p + k * 64);
            hi[0] = _mm512_load_si512(p + 256);
            hi[1] = _mm512_load_si512(p + 320);
            __m512i isum[C][2];
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) isum[c][0] = start[c][0], isum[c][1] = start[c][1];
#pragma GCC unroll 8
            for (int s = 0; s < kI8Steps; ++s) {
                const __m512i code = x86::q6_step_codes<Isa>(lo[s / 2], hi[s / 4], s);
#pragma GCC unroll 8
                for (int c = 0; c < C; ++c)
                    isum[c][s / 4] = _mm512_dpbusd_epi32(isum[c][s / 4], code,
                                                         _mm512_loadu_si512(xc[c] + xoff + s * 64));
            }
            const __m512 dw = _mm512_cvtph_ps(
                _mm256_load_si256(reinterpret_cast<const __m256i*>(wrow[r] + d_off + boff * 2)));
            const uint8_t* sc = wrow[r] + sc_off + ch * 32;
            const __m512 sca = _mm512_cvtepi32_ps(
                _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc))));
            const __m512 scb = _mm512_cvtepi32_ps(
                _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16))));
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) {
                const __m512 dx = _mm512_loadu_ps(x.scales_of(j0 + c) + boff);
                acc[r][c] = x86::scale_chunk_q6<Isa>(isum[c][0], isum[c][1], sca, scb, dw, dx,
                                                     acc[r][c]);
            }
        }
    }
    stream.planes(wrow, R, d_off);
    store_sums<R, C>(acc, y + j0 * ldy, ldy);
}

template <WType T, int R, int Cmax, TileOptions O>
void tile_cols(int c, const uint8_t* const* wrow, const x86::TilePrefetchPlan& plan, int64_t chunks, size_t d_off,
               size_t m_off, const QuantizedColumns& x, int64_t j0, float* y, int64_t ldy) {
    if (c == Cmax) {
        if constexpr (T == WType::Q6_KX)
            return tile_q6<R, Cmax, O>(wrow, plan, chunks, d_off, m_off, x, j0, y, ldy);
        else
            return tile<T, R, Cmax, O>(wrow, plan, chunks, d_off, m_off, x, j0, y, ldy);
    }
    if constexpr (Cmax > 1)
        tile_cols<T, R, Cmax - 1, O>(c, wrow, plan, chunks, d_off, m_off, x, j0, y, ldy);
}

// Column groups of up to 4 (q8) or 3 (4-bit: each code step is two dot products, and a 4 x 4
// tile measured slower than 3 + 1 cache-resident); 4 rows for more than one column (the R x C
// integer sums stay in registers; the float accumulators, touched once per chunk, may spill).
// Q6_KX works one row at a time inside a tile (two integer sums per column and six code
// vectors per row): up to 4 columns, so a width-4 verify rebuilds each row's codes once, not
// twice as 2 + 2 (kernels_bench, alternating binaries: 2048 x 6144 at width 4 460-531 -> 382-440
// us, the 32768 x 1024 LM head shape 1212-1285 -> 1123-1178; width 8 unchanged).
template <WType T>
constexpr bool kFourBitTile = !int8_dot_eight_bit(T) && T != WType::Q6_KX;
template <WType T>
constexpr int kMaxCols = kFourBitTile<T> ? 3 : 4;
// Exactly 4 columns of a 4-bit type (a depth-3 verify) go as one 4 x 4 pass instead of 3 + 1:
// the weights stream once instead of being reread from cache. 0.8B q4_0 forwards, alternating:
// width 4 22.8 vs 24.2 ms; wider batches keep groups of 3 (width 8 36.8 vs 38.6 ms as 4 + 4,
// prefill 128 434 vs 484 ms).
// Off AMD every verify width of 4 to 8 columns goes as one pass (4 x n tiles; from 5 columns the
// integer sums fill the registers and the activations are read from L1 instead), for the same
// reason. On a Xeon (Granite Rapids-class VM, kernel_ab against the groups, 0.8B forwards): q4_0
// width 5 0.90-0.91x the time (3 + 2 before), 6 0.89-0.94x, 7 0.85-0.87x, 8 0.88-0.90x; q8_0
// width 5 0.91x (4 + 1), 6 0.91x, 8 0.95x. Q6_KX keeps its groups of 4 (one row at a time).
// AMD keeps what was measured on Zen 4: only the 4-bit width 4. Zen 5 takes that one pass
// (streaming, tiles_stream) only for rows over 1 KB: kernel_ab there against it for every row,
// width-4 forwards, 0.8B q4_0 0.906-0.948x the time (its 576-byte rows in groups of 3 + 1 with
// the bursts, its 2016-byte ones in one pass), 2B q4_0 1.008x (every row in groups: 1.06-1.08x).
// One pass without streaming took 1.08-1.26x the time there.
constexpr int kOnePassMaxColumns = 8;
constexpr size_t kZen5MinOnePassRowBytes = 1025;

// How many columns a matmul of n columns (rows of row_bytes) runs as one group (a pass of tiles
// that many columns wide), or 0 when it goes in groups of kMaxCols.
template <WType T>
int one_pass_columns(int64_t n, size_t row_bytes) {
    if (T == WType::Q6_KX || n < 4) return 0;
    if (x86::amd_zen5_or_later()) return kFourBitTile<T> && n == 4 && row_bytes >= kZen5MinOnePassRowBytes ? 4 : 0;
    if (x86::tiles_tuned_as_amd()) return kFourBitTile<T> && n == 4 ? 4 : 0;
    return n <= kOnePassMaxColumns ? int(n) : 0;
}

// Rows per single-column (decode) tile, by vendor.
// Zen 4 (AMD before Zen 5): 4, or 8 when 4 rows span under 4 KB. Measured on Zen 4
// (kernels_bench, alternating binaries, 2 threads): q8_0 rows of 6144 values 215 vs 259 us and
// of 1024 values 544 vs 602 us with 4 rows instead of 8, and 0.8B q8_0 decode 58-62 vs 53-56
// tok/s; but q4_0 rows of 1024 values (576 bytes) 367 vs 309 us: fewer streams in flight stream
// better until a tile's rows get that short.
// Elsewhere: 4, or 2 for rows of 641-1200 bytes; tiles of about 2.2 KB stream best on a Xeon
// (Granite Rapids-class VM, kernel_ab against the Zen 4 rule, decode): 0.8B q4_0 0.927-0.938x the
// time (its 576-byte rows in 4-row tiles instead of 8; 2 rows: 0.96x), q8_0 0.959x (1088-byte
// rows in 2-row tiles), 2B q4_0 0.970x (1152-byte rows), 2B q8_0 unchanged; 2-row tiles also for
// its 2176-byte rows cost it 2-3% (1.021, and 1.032 with every row length in 2-row tiles).
// Zen 5 takes the Xeon's rule (kernel_ab against Zen 4's, with its prefetcht0 bursts, decode):
// 0.8B q4_0 0.935-0.950x the time (4-row tiles instead of 8), q8_0 0.974-0.986x (2 rows instead
// of 4), 2B q4_0 0.94-1.00x, q8_0 1.00x.
constexpr size_t kMinSingleColumnTileBytes = 4096;

// In a matmul of n > 1 columns on Zen 5 every single-column tile is 8 rows: there the lone column
// is the last group of a verify (4-bit width 4 or 7 as 3 + 1 groups, 8-bit width 5 as 4 + 1),
// which reruns rows the wider group has just brought into cache. It is bound by the tile's
// dot-product latency and its per-tile work, not by memory, and 8 rows run 8 chains of
// dot products instead of 4 and halve the tiles. kernel_ab against the memory-sized heights:
// 0.8B q4_0 width 4 0.963-0.966x the time, width 7 0.974x, q8_0 width 5 0.962x; 2B q4_0 width 4
// 0.984x, q8_0 width 5 0.999x.
int single_column_tile_rows(size_t row_bytes, int64_t n) {
    if (x86::tiles_tuned_as_amd() && !x86::amd_zen5_or_later()) return 4 * row_bytes < kMinSingleColumnTileBytes ? 8 : 4;
    if (n > 1 && x86::amd_zen5_or_later()) return 8;
    return row_bytes > 640 && row_bytes <= 1200 ? 2 : 4;
}

// Calls run.template operator()<O>() with the options picked at run time (stream: the plans
// stream; gfni: the CPU has GFNI), instantiating only those a type and tile height can take:
// a CPU that decodes with 8-row tiles (AMD) never streams, and only 4-bit tiles unpack nibbles.
template <WType T, int RowsOne, class Run>
void with_tile_options(bool stream, bool gfni, Run&& run) {
    constexpr bool kMayStream = RowsOne != 8, kMayGfni = kFourBitTile<T>;
    if constexpr (kMayStream && kMayGfni)
        if (stream && gfni) return run.template operator()<TileOptions{true, true}>();
    if constexpr (kMayStream)
        if (stream) return run.template operator()<TileOptions{true, false}>();
    if constexpr (kMayGfni)
        if (gfni) return run.template operator()<TileOptions{false, true}>();
    run.template operator()<TileOptions{}>();
}

// Whether a matmul of n columns, one_pass of them a pass (one_pass_columns), streams: wherever
// x86::streams_on_this_cpu says so, and on Zen 5 also the 4-bit width 4's one pass. Measured
// there (kernel_ab against its bursts two tiles ahead, 0.8B and 2B q4_0 width-4 forwards):
// 0.84-0.90x and 0.83-0.86x the time. Other widths did not gain on Zen 5 (q4_0 width 2 and 3
// 1.10-1.18x, width 8 as one streaming pass 1.21x; q8_0 streaming at any width 1.05-1.36x), nor
// did Xeon's shorter bursts for q8_0 (1.09-1.12x), so those keep Zen 4's settings.
template <WType T>
bool tiles_stream(int64_t n, int one_pass) {
    if (x86::streams_on_this_cpu(n)) return true;
    return kFourBitTile<T> && one_pass == 4 && x86::amd_zen5_or_later();
}

// The matmul's tiles, as gemm_i8_impl picked them: gfni (the CPU has it and the caller allows
// it), one_pass (one_pass_columns, or 0: column groups), stream (tiles_stream; never with 8-row
// single-column tiles, whose streaming variants are not built).
template <WType T, int RowsOne>
void gemm_i8_tiles(bool gfni, int one_pass, bool stream, const WeightMatrix& w, const QuantizedColumns& x, float* y,
                   int64_t ldy, int64_t r0, int64_t r1) {
    const int64_t chunks = x.chunks;
    const size_t d_off = int8_dot_plane_offset(T, chunks, 0);
    const size_t m_off = int8_dot_plane_offset(T, chunks, 1);
    const x86::TilePrefetchPlans<RowsOne, 4, 1> plans(w.row_bytes, chunks, x86::prefetch_burst_lines_for_this_cpu(),
                                                      stream);
    auto run = [&]<int MaxCols, TileOptions O>() {
        x86::int8_dot_rows<MaxCols, RowsOne, 4>(
            w, x.n, r0, r1, [&]<int R>(int c, const uint8_t* const* wrow, int64_t j0, int64_t r) {
                if constexpr (R == 8 && T != WType::Q6_KX)  // one column only (Q6_KX: tile_q6)
                    tile<T, 8, 1, O>(wrow, plans.template for_rows<8>(), chunks, d_off, m_off, x, j0, y + r, ldy);
                else
                    tile_cols<T, R, MaxCols, O>(c, wrow, plans.template for_rows<R>(), chunks, d_off, m_off, x, j0,
                                                y + r, ldy);
            });
    };
    // One group of exactly N columns: only 4 x N tiles, and 1 x N ones for rows left over. Not
    // run<N>: its tile_cols would also build every narrower tile, and 2- and 8-row ones, for
    // column counts a one-pass call never has (each 4 x 5..8 tile is large to compile).
    auto run_one_pass = [&]<int N, TileOptions O>() {
        x86::int8_dot_rows<N, RowsOne, 4>(
            w, x.n, r0, r1, [&]<int R>(int, const uint8_t* const* wrow, int64_t j0, int64_t r) {
                if constexpr (R == 4 || R == 1)
                    tile<T, R, N, O>(wrow, plans.template for_rows<R>(), chunks, d_off, m_off, x, j0, y + r, ldy);
                // (no single-column tiles of other heights: every group here has N > 1 columns)
            });
    };
    with_tile_options<T, RowsOne>(stream, gfni, [&]<TileOptions O>() {
        if constexpr (T != WType::Q6_KX) {
            if (one_pass == 4) return run_one_pass.template operator()<4, O>();
            // 5 to 8 columns in one pass happen only off AMD, where they stream: only those
            // tiles are built (each is large), and any other case takes the groups.
            if constexpr (O.stream) {
                switch (one_pass) {
                    case 5: return run_one_pass.template operator()<5, O>();
                    case 6: return run_one_pass.template operator()<6, O>();
                    case 7: return run_one_pass.template operator()<7, O>();
                    case 8: return run_one_pass.template operator()<8, O>();
                    default: break;
                }
            }
        }
        run.template operator()<kMaxCols<T>, O>();
    });
}

template <WType T>
void gemm_i8_impl(const Int8TileChoice& choice, const WeightMatrix& w, const QuantizedColumns& x, float* y,
                  int64_t ldy, int64_t r0, int64_t r1) {
    const int one_pass = choice.one_pass ? one_pass_columns<T>(x.n, w.row_bytes) : 0;
    const bool stream = tiles_stream<T>(x.n, one_pass);
    // A one-pass matmul has no single-column tiles, so their height matters only as the gate
    // on streaming (8-row tiles never stream): one that streams takes 4 rows.
    const int tile_rows = one_pass && stream && choice.tile_rows == 8 ? 4 : choice.tile_rows;
    switch (tile_rows) {
        case 8: return gemm_i8_tiles<T, 8>(choice.gfni, one_pass, false, w, x, y, ldy, r0, r1);
        case 2: return gemm_i8_tiles<T, 2>(choice.gfni, one_pass, stream, w, x, y, ldy, r0, r1);
        default: return gemm_i8_tiles<T, 4>(choice.gfni, one_pass, stream, w, x, y, ldy, r0, r1);
    }
}

}  // namespace

void gemm_i8_rows_with(const Int8TileChoice& choice, const WeightMatrix& w, const QuantizedColumns& x, float* y,
                       int64_t ldy, int64_t r0, int64_t r1) {
    Int8TileChoice resolved = choice;  // what this CPU and row length allow
    resolved.gfni = choice.gfni && x86::gfni_on_this_cpu();
    if (is_row_group_type(w.type)) return gemm_row_groups(w, x, y, ldy, r0, r1, resolved.gfni);  // own layout
    if (resolved.tile_rows == 0) resolved.tile_rows = single_column_tile_rows(w.row_bytes, x.n);
    visit_int8_dot_type(w.type, [&]<WType T>() { gemm_i8_impl<T>(resolved, w, x, y, ldy, r0, r1); });
}

void gemm_i8_rows_cursor(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                         int64_t r0, int64_t r1) {
    if (!is_row_group_type(w.type)) return gemm_i8_rows(w, x, y, ldy, r0, r1);
    gemm_row_groups(w, x, y, ldy, r0, r1, x86::gfni_on_this_cpu(), RowGroupFetch::Cursor);
}

void gemm_i8_rows_group_streams(const WeightMatrix& w, const QuantizedColumns& x, float* y,
                                int64_t ldy, int64_t r0, int64_t r1) {
    if (!is_row_group_type(w.type)) return gemm_i8_rows(w, x, y, ldy, r0, r1);
    gemm_row_groups(w, x, y, ldy, r0, r1, x86::gfni_on_this_cpu(),
                    RowGroupFetch::NarrowGroupStreams);
}

bool shares_narrow_tails_on_this_cpu() { return x86::amd_zen5_or_later(); }

bool prefetches_cursor_on_this_cpu() { return x86::tiles_tuned_as_amd(); }

void gemm_i8_rows(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy,
                  int64_t r0, int64_t r1) {
    gemm_i8_rows_with(Int8TileChoice{}, w, x, y, ldy, r0, r1);
}

namespace {

// NaN, +Inf, -Inf (quiet and signalling NaN: classes 0x01, 0x80; infinities 0x08, 0x10).
constexpr int kNonFinite = 0x01 | 0x08 | 0x10 | 0x80;

// Lane l of the result is the unsigned maximum of the 16 lanes of v[l] (a transposing tree: 45
// shuffles and maxima for all 16 instead of a reduction per vector).
__m512i max_each(const __m512i* v) {
    auto max = [](__m512i a, __m512i b) { return _mm512_max_epu32(a, b); };
    __m512i w[8], x[4], y[2];
    // Pairs of vectors: 128-bit lanes (0, 2) with (1, 3); w[i] holds v[2i]'s and v[2i+1]'s 8 partials.
    for (int i = 0; i < 8; ++i)
        w[i] = max(_mm512_shuffle_i32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                   _mm512_shuffle_i32x4(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    // x[i]: 128-bit lane k holds the 4 partials of v[4i + k].
    for (int i = 0; i < 4; ++i)
        x[i] = max(_mm512_shuffle_i32x4(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                   _mm512_shuffle_i32x4(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    // Within each 128-bit lane k: y[i] pairs x[2i] with x[2i+1], then z holds x0..x3 reduced,
    // so z's element 4k + m is the result of v[4m + k].
    for (int i = 0; i < 2; ++i)
        y[i] = max(_mm512_unpacklo_epi32(x[2 * i], x[2 * i + 1]), _mm512_unpackhi_epi32(x[2 * i], x[2 * i + 1]));
    const __m512i z = max(_mm512_unpacklo_epi64(y[0], y[1]), _mm512_unpackhi_epi64(y[0], y[1]));
    const __m512i to_block = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_epi32(to_block, z);
}

// One block half's codes: round-half-even of v * inv clamped to [-127, 127], as int32. Clamping
// before rounding gives the same integers (the bounds are integers), and the rounding is the
// conversion's own, so one instruction fewer than a separate round.
__m512i block_codes(__m512 v, __m512 inv) {
    const __m512 clamped = _mm512_min_ps(
        _mm512_max_ps(_mm512_mul_ps(v, inv), _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    return _mm512_cvt_roundps_epi32(clamped, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// A whole chunk (16 full blocks at p) with the block quantizer's operations, the 16 blocks' scalar
// steps (amax, d, 1/d, the sums) done once for all in the lanes of one vector: the per-block
// horizontal reductions and divisions were most of the quantizer's time. false when a value is
// not finite (nothing written).
bool quantize_chunk(const float* p, int8_t* codes, float* scales, int32_t* sums, int32_t* half_sums) {
    // |x| as bits: for values that are not NaN the unsigned integer order is the float order, and
    // +Inf (0x7f800000) and NaN (above it) exceed every finite value, so one integer maximum per
    // block gives amax and tells whether the block is finite.
    const __m512i abs_bits = _mm512_set1_epi32(0x7fffffff);
    __m512i m[16];  // [block] per lane: the larger |value| of the block's two halves, as bits
#pragma GCC unroll 16
    for (int l = 0; l < 16; ++l) {
        const __m512i a = _mm512_and_si512(_mm512_loadu_si512(p + 32 * l), abs_bits);
        const __m512i c = _mm512_and_si512(_mm512_loadu_si512(p + 32 * l + 16), abs_bits);
        m[l] = _mm512_max_epu32(a, c);
    }
    const __m512i amax_bits = max_each(m);  // [block]
    if (_mm512_cmpge_epu32_mask(amax_bits, _mm512_set1_epi32(0x7f800000)) != 0) return false;
    const __m512 amax = _mm512_castsi512_ps(amax_bits);
    const __m512 d = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
    // int8_inverse_scale, lane-wise: 1/d where d > 0, and 0 where that overflows.
    __m512 inv = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_GT_OQ),
                                     _mm512_set1_ps(1.0f), d);
    inv = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(inv, _mm512_set1_ps(3.4028234e38f), _CMP_LE_OQ), inv);
    _mm512_storeu_ps(scales, d);

    // To the chunk layout: step s holds codes 4s..4s+3 of every block, block l at dword l. The
    // saturating packs of four blocks' int32 codes (already in [-127, 127], so exact) put, in
    // 128-bit lane k, codes 4k..4k+3 of each of the four: step k's (or 4 + k's) dwords for those
    // blocks. A 128-bit lane transpose across the four groups of blocks gives the steps. (Before:
    // each half narrowed alone, stored and reloaded four to a vector (a load that store
    // forwarding cannot serve), then transposed by dwords, and the sums taken with psadbw. Zen 5,
    // session 46: quantize_columns of 4 columns of 1024-3584 values, in a loop, 0.85-0.88x the
    // time; over a width-4 verify of the 0.8B, 0.41-0.42 against 0.43-0.47 ms a forward.)
    __m512i packed[2][4];  // [half][group of 4 blocks]
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
        __m512i half_codes[2][4];  // [half][block of the group] as int32
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
            const int l = 4 * g + i;
            const __m512 vinv = _mm512_permutexvar_ps(_mm512_set1_epi32(l), inv);
            half_codes[0][i] = block_codes(_mm512_loadu_ps(p + 32 * l), vinv);
            half_codes[1][i] = block_codes(_mm512_loadu_ps(p + 32 * l + 16), vinv);
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h)
            packed[h][g] =
                _mm512_packs_epi16(_mm512_packs_epi32(half_codes[h][0], half_codes[h][1]),
                                   _mm512_packs_epi32(half_codes[h][2], half_codes[h][3]));
    }
    // Sums of each block's codes, from the steps: one dot product with ones adds a step's four
    // codes of every block into that block's lane (exact in int32).
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i half_sum = _mm512_setzero_si512(), second_sum = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
        const __m512i* q = packed[h];
        const __m512i t0 = _mm512_shuffle_i32x4(q[0], q[1], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i t1 = _mm512_shuffle_i32x4(q[0], q[1], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i t2 = _mm512_shuffle_i32x4(q[2], q[3], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i t3 = _mm512_shuffle_i32x4(q[2], q[3], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512i step[4] = {_mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1)),
                                 _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1))};
        int8_t* dst = codes + h * 4 * 64;
        __m512i& sum = h == 0 ? half_sum : second_sum;
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            _mm512_storeu_si512(dst + k * 64, step[k]);
            sum = _mm512_dpbusd_epi32(sum, ones, step[k]);
        }
    }
    _mm512_storeu_si512(half_sums, half_sum);
    _mm512_storeu_si512(sums, _mm512_add_epi32(half_sum, second_sum));
    return true;
}

}  // namespace

// Per 32-value block: the same operations as ref::quantize_columns, in vector form (the max
// is exact in any order; d, 1/d, x * (1/d) and round-half-even are single IEEE operations).
// Whole chunks go 16 blocks at a time (quantize_chunk).
void quantize_columns(const float* x, int64_t cols, QuantizedColumns& out, int64_t j0, int64_t j1) {
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    const __m512 lim = _mm512_set1_ps(127.0f), neg_lim = _mm512_set1_ps(-127.0f);
    quantize_columns_with(x, cols, out, j0, j1, [&](const float* p, int64_t left, int8_t* q, int32_t* sum,
                                                    int32_t* half) {
        // A ragged last block reads zeros past cols, as the reference does.
        const __mmask16 ma = left >= 16 ? __mmask16(0xffff) : Isa::mask(int(left));
        const __mmask16 mc = left >= 32 ? __mmask16(0xffff) : left <= 16 ? __mmask16(0) : Isa::mask(int(left - 16));
        const __m512 a = _mm512_maskz_loadu_ps(ma, p);
        const __m512 c = _mm512_maskz_loadu_ps(mc, p + 16);
        if ((_mm512_fpclass_ps_mask(a, kNonFinite) | _mm512_fpclass_ps_mask(c, kNonFinite)) != 0)
            return std::numeric_limits<float>::quiet_NaN();
        const float amax = _mm512_reduce_max_ps(
            _mm512_max_ps(_mm512_and_ps(a, abs_mask), _mm512_and_ps(c, abs_mask)));
        const float d = amax / 127.0f;
        const __m512 vinv = _mm512_set1_ps(int8_inverse_scale(d));
        auto code = [&](__m512 v) {
            const __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(v, vinv),
                                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            return _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, neg_lim), lim));
        };
        const __m512i qa = code(a), qc = code(c);  // elements 0..15, 16..31 as int32
        *half = _mm512_reduce_add_epi32(qa);
        *sum = *half + _mm512_reduce_add_epi32(qc);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(qa));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(qc));
        return d;
    }, quantize_chunk);
}

}  // namespace nextn::avx512
