#pragma once
// What the x86 int8-dot kernels (kernels/int8_dot.h) share: the per-chunk scaling, written once
// over an ISA description `I` (x86/<isa>/isa_<isa>.h), and the walk over rows and column groups.
// Include only from an ISA translation unit. Everything here has internal linkage: translation
// units built with different ISA flags instantiate these with the same types (the AVX2 and
// AVX-VNNI kernels both use avx2::Isa), and the linker must never pick one unit's copy for the
// other.
#include <cpuid.h>

#include <algorithm>
#include <bit>

#include "kernels/int8_dot.h"

namespace nextn::x86 {
namespace {

// k * xsum for k = 0 or +-2^j.
template <class I, int K>
typename I::Vi times_xsum(typename I::Vi xsum) {
    static_assert(K == 0 || std::has_single_bit(unsigned(K < 0 ? -K : K)), "a power of two");
    constexpr unsigned kShift = unsigned(std::countr_zero(unsigned(K < 0 ? -K : K)));
    if constexpr (K == 0)
        return I::zero_i32();
    else if constexpr (K > 0)
        return I::shl_i32(xsum, kShift);
    else
        return I::sub_i32(I::zero_i32(), I::shl_i32(xsum, kShift));
}

// What a lane's integer sum over a chunk needs added (xsum: the block's activation code sum)
// to be exact: sum (code - offset) * x for Q8_0X / Q4_0X (offset 128 / 8), sum code * x for the
// affine types. `Bias` is what the dot products subtracted from every code (AVX2's pmaddubsw
// path multiplies 8-bit codes as w - 128), given back here. Computed once per column and chunk
// (shared by the tile's rows), it leaves one add per (row, column) in the chunk's scaling,
// which at 4 columns is about as much work as the dot products.
template <class I, WType T, int Bias>
typename I::Vi chunk_start(typename I::Vi xsum) {
    constexpr int kOffset = T == WType::Q8_0X ? 128 : T == WType::Q4_0X ? 8 : 0;
    return times_xsum<I, Bias - kOffset>(xsum);
}

// Applies one chunk's exact integer sums (corrected by chunk_start) to the float accumulators,
// I::L lanes (blocks) at a time: dw the blocks' weight scales, dm their offsets (affine types
// only), dx the activation scales, xsum the activation code sums.
template <class I, WType T>
typename I::V scale_chunk(typename I::Vi isum, typename I::Vi xsum, typename I::V dw,
                          typename I::V dm, typename I::V dx, typename I::V acc) {
    acc = I::fma(I::to_float(isum), I::mul(dw, dx), acc);
    if constexpr (int8_dot_affine(T)) acc = I::fma(I::to_float(xsum), I::mul(dm, dx), acc);
    return acc;
}

// Q6_KX: the start values of the two sub-block sums (steps 0..3 and 4..7), the codes' offset of 32
// times the activation codes' first-half sum xhalf and second-half sum xsum - xhalf.
template <class I>
typename I::Vi q6_start_first(typename I::Vi xhalf) {
    return times_xsum<I, -32>(xhalf);
}
template <class I>
typename I::Vi q6_start_second(typename I::Vi xsum, typename I::Vi xhalf) {
    return times_xsum<I, -32>(I::sub_i32(xsum, xhalf));
}

// Q6_KX: code step s (0..7) of a lane group from the vector `low` holding its low nibbles (the
// low halves of the bytes for even s, the high halves for odd s) and the vector `high` holding
// its high 2 bits at bits 2t, 2t+1 (t = s % 4). The 16-bit shifts move bits across byte
// boundaries only where the 0x30 mask drops them. Call with a constant s (an unrolled loop).
template <class I>
typename I::Vi q6_step_codes(typename I::Vi low, typename I::Vi high, int s) {
    const typename I::Vi nib = I::and_i(s % 2 ? I::template shr_i16<4>(low) : low, I::splat_i8(15));
    const int t = s % 4;
    const typename I::Vi moved = t == 0   ? I::template shl_i16<4>(high)
                                 : t == 1 ? I::template shl_i16<2>(high)
                                 : t == 2 ? high
                                          : I::template shr_i16<2>(high);
    return I::or_i(nib, I::and_i(moved, I::splat_i8(0x30)));
}

// Step s (0..7) of a Q2_KR block (kernels/row_groups.h) as bytes 0..3, from the vector `two_bits`
// holding them at bits 2t, 2t+1 (t = s % 4; vector s / 4 of the block): Q3_KR's low 2 bits. The
// 16-bit shift moves bits across byte boundaries only where the mask drops them. Call with a
// constant s (an unrolled loop).
template <class I>
typename I::Vi q2_step_codes(typename I::Vi two_bits, int s) {
    const int t = s % 4;
    return I::and_i(t == 0   ? two_bits
                    : t == 1 ? I::template shr_i16<2>(two_bits)
                    : t == 2 ? I::template shr_i16<4>(two_bits)
                             : I::template shr_i16<6>(two_bits),
                    I::splat_i8(3));
}

// Step s (0..7) of a Q3_KR block (kernels/row_groups.h) as bytes q3 + 28 (28..35), from the
// vector `two_bits` holding its low 2 bits at bits 2t, 2t+1 (t = s % 4; vector s / 4 of the
// block) and `high` its high bits at bit s. The 16-bit shifts move bits across byte boundaries
// only where the masks drop them; the add of 28 stays within each byte (at most 35). Call with a
// constant s (an unrolled loop).
template <class I>
typename I::Vi q3_step_codes(typename I::Vi two_bits, typename I::Vi high, int s) {
    const typename I::Vi low = q2_step_codes<I>(two_bits, s);
    const typename I::Vi moved = s == 0   ? I::template shl_i16<2>(high)
                                 : s == 1 ? I::template shl_i16<1>(high)
                                 : s == 2 ? high
                                 : s == 3 ? I::template shr_i16<1>(high)
                                 : s == 4 ? I::template shr_i16<2>(high)
                                 : s == 5 ? I::template shr_i16<3>(high)
                                 : s == 6 ? I::template shr_i16<4>(high)
                                          : I::template shr_i16<5>(high);
    return I::add_i32(I::or_i(low, I::and_i(moved, I::splat_i8(4))), I::splat_i8(28));
}

// Q5_KR (kernels/row_groups.h): bit s (0..7) of each byte of `fifth` moved to bit 4 (step s's
// fifth code bit), the other bits zero. Call with a constant s (an unrolled loop). Forced inline:
// GCC left it a call in the 256-bit tiles, where a width-1 product then took 1.6-2.2x the time.
template <class I>
[[gnu::always_inline]] inline typename I::Vi q5_fifth_bits(typename I::Vi fifth, int s) {
    const typename I::Vi moved = s == 0   ? I::template shl_i16<4>(fifth)
                                 : s == 1 ? I::template shl_i16<3>(fifth)
                                 : s == 2 ? I::template shl_i16<2>(fifth)
                                 : s == 3 ? I::template shl_i16<1>(fifth)
                                 : s == 4 ? fifth
                                 : s == 5 ? I::template shr_i16<1>(fifth)
                                 : s == 6 ? I::template shr_i16<2>(fifth)
                                          : I::template shr_i16<3>(fifth);
    return I::and_i(moved, I::splat_i8(0x10));  // 16-bit shifts: what crosses a byte is dropped
}

// Q6_KX's chunk scaling: ia, ib the exact sub-block sums, sca / scb the sub-block scales (int8
// values, as floats: convert them once per row and block, not per column). The join
// ia * sca + ib * scb is formed in float and is still exact, so it equals the reference's int32
// join converted, bit for bit: |ia|, |ib| <= 16 values x 32 (|code - 32|) x 128 (|activation|) =
// 2^16, so each product is an integer of at most 2^23 and their sum of at most 2^24, and every
// such integer is a float; the multiply rounds nothing, and the fused multiply-add rounds only its
// exact result, which it keeps. Two 32-bit multiplies (on a Xeon two uops each, on port 0, beside
// the dot products), an add and a conversion become two conversions, a multiply and an FMA.
template <class I>
typename I::V scale_chunk_q6(typename I::Vi ia, typename I::Vi ib, typename I::V sca,
                             typename I::V scb, typename I::V dw, typename I::V dx,
                             typename I::V acc) {
    const typename I::V exact = I::fma(I::to_float(ia), sca, I::mul(I::to_float(ib), scb));
    return I::fma(exact, I::mul(dw, dx), acc);
}

// Lines of the next tile fetched per burst at most: one 4-row tile of 1024-value Q8_0X rows, the
// tile that streams most of a Qwen3.5-0.8B decode. Longer tiles are fetched in several bursts.
constexpr int64_t kPrefetchBurstLines = 68;
// A quarter of that, which a Xeon streams better with: on a Granite Rapids-class VM (kernel_ab,
// 0.8B forwards) q8_0 decode took 0.946-0.958x the time with bursts of at most 34 lines (17 and
// 24: 0.946-0.954; the AVX2 kernel 0.957x), width 4 0.971x (q4_0 0.962x), prefill 128 0.983x;
// q4_0 decode and the 2B q8_0 decode 1.00x. With the 2-row q8_0 decode tiles of 34 lines that
// AVX-512 uses there now (gemm_i8_avx512.cpp), bursts of 17 took 0.975-0.976x the time of 34
// (2B q8_0 and q4_0 0.99x, width 4 and the AVX2 kernel 1.00x). On Zen 4 bursts of 34 had cost
// the q8_0 decode 4.5% (its 2-chunk tiles then fetch twice), so AMD keeps 68.
constexpr int64_t kPrefetchBurstLinesShort = 17;

// Whether the tiles take the settings measured on Zen 4 (AMD) or those measured on a Xeon (every
// other CPU): the burst limit here, and in the AVX-512 unit the single-column tile height and how
// far ahead 4-bit tiles of several columns fetch. Zen 5 departs from Zen 4's where it was
// measured to (amd_zen5_or_later's callers). The one place that asks the vendor; a builtin,
// not cpu_features.cpp, because kernel_ab compiles one kernel unit alone, its namespace renamed.
[[maybe_unused]] bool tiles_tuned_as_amd() {
    static const bool amd = __builtin_cpu_is("amd");
    return amd;
}

// Whether the CPU is an AMD one of family 1Ah or later (Zen 5 on): a few settings were measured
// there apart from Zen 4's (family 19h), which tiles_tuned_as_amd's rules were measured on. CPUID
// leaf 1, not __builtin_cpu_is("znver5"), which GCC 12 does not know.
[[maybe_unused]] bool amd_zen5_or_later() {
    static const bool zen5 = [] {
        if (!tiles_tuned_as_amd()) return false;
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
        const unsigned base = (eax >> 8) & 0xf, extended = (eax >> 20) & 0xff;
        return (base == 0xf ? base + extended : base) >= 0x1a;
    }();
    return zen5;
}

// Whether the CPU has GFNI (the AVX-512 4-bit tiles unpack with it). A builtin for the reason
// tiles_tuned_as_amd gives.
[[maybe_unused]] bool gfni_on_this_cpu() {
    static const bool gfni = __builtin_cpu_supports("gfni");
    return gfni;
}

// The burst limit for the CPU this runs on.
[[maybe_unused]] int64_t prefetch_burst_lines_for_this_cpu() {
    return tiles_tuned_as_amd() ? kPrefetchBurstLines : kPrefetchBurstLinesShort;
}

// How far ahead of the line it reads a tile prefetches when it streams (StreamPrefetch, off
// AMD): each code line it loads, and its rows' scale planes, kStreamAheadBytes further on in the
// row-major stream of its thread's rows. Why: the bursts (NextTilePrefetch) fill the core's
// line-fill buffers, and their last prefetches wait for a free one (perf put 15-21% of a tile's
// samples there); lines fetched one at a time a few KB ahead, as the read probe fetches them,
// leave the hardware's L2 streamer room to run ahead. On a Xeon (Granite Rapids-class VM,
// kernel_ab against the bursts, 0.8B forwards): q4_0 width 1, 2, 4, 8 0.87-0.90, 0.87, 0.88,
// 0.91x the time, q8_0 width 1, 2, 4 0.94-0.96, 0.96, 0.94x; 2B q4_0 width 1 0.85x, width 4
// 0.91x, q8_0 0.97x. Against 8 KB ahead: 4 KB 1.02-1.05x the time, 16 KB 1.01-1.02x (32 KB
// did worse than 16 KB against the bursts: q4_0 0.93 against 0.90). A prefill (above
// kStreamMaxColumns columns) keeps the bursts: it computes long enough per byte that streaming
// took 1.04x its time at width 128.
constexpr int64_t kStreamAheadBytes = 8192;
constexpr int64_t kStreamMaxColumns = 8;

// Whether a matmul of n columns streams on this CPU (else: the next tile in bursts).
[[maybe_unused]] bool streams_on_this_cpu(int64_t n) { return !tiles_tuned_as_amd() && n <= kStreamMaxColumns; }

// Whether the bursts prefetch into L1 (prefetcht0) rather than L2 (prefetcht2): on Zen 5 only.
// There (kernel_ab against prefetcht2, alternating forwards): 0.8B q8_0 decode 0.92-0.985x the
// time, q4_0 0.935-0.994x, 2B q8_0 0.95-0.97x, q4_0 0.89-0.98x, q8_0 width 2 0.89-0.95x, width 4
// 0.97-0.99x, prefill 128 unchanged (0.98-1.03x); the 256-bit kernel's decode 0.98-0.99x. On
// Zen 4 prefetcht0 bursts had been the slower (below), and Xeon keeps what it was measured with.
[[maybe_unused]] bool bursts_to_l1_on_this_cpu() { return amd_zen5_or_later(); }

// When and how much of the next tile a tile of R rows prefetches, worked out once per matmul
// call (TilePrefetchPlans) so that the tiles themselves do no division: the divisions by a
// run-time burst count were 3 idiv a burst, in every tile. A streaming plan issues no bursts:
// its tiles prefetch line by line instead (StreamPrefetch).
struct TilePrefetchPlan {
    int64_t tile_bytes = 0;    // the next tile's bytes (R rows)
    int64_t burst_bytes = 0;   // bytes a burst (a whole number of lines; the last may be short)
    int64_t chunk_step = 1;    // chunks from one burst to the next
    bool stream = false;       // the tiles stream (no bursts)
    bool to_l1 = false;        // bursts into L1 (bursts_to_l1_on_this_cpu), else L2
    size_t row_bytes = 0;      // a row's bytes (codes, then scale planes)

    TilePrefetchPlan() = default;
    TilePrefetchPlan(int rows, size_t row_bytes, int64_t chunks, int64_t max_burst_lines = kPrefetchBurstLines,
                     bool stream = false)
        : stream(stream), to_l1(bursts_to_l1_on_this_cpu()), row_bytes(row_bytes) {
        const int64_t lines = int64_t(size_t(rows) * row_bytes / 64);
        const int64_t bursts = std::max<int64_t>(burst_count(lines, chunks, max_burst_lines), 1);
        tile_bytes = 64 * lines;
        burst_bytes = 64 * ((lines + bursts - 1) / bursts);
        chunk_step = std::max<int64_t>(chunks / bursts, 1);
    }

private:
    // Bursts of at most max_burst_lines, but never more bursts than chunks (a 1-chunk tile
    // goes as one); a tile of 4 or more chunks goes one burst per chunk where that keeps 32
    // lines or more a burst. kernel_ab on Zen 4, forward times against bursts of 68 at most: 2B
    // Q8_0 decode 0.94-0.96x, 9B 0.96x, 0.8B Q4_0 0.97x, 0.8B Q8_0 1.00x.
    static int64_t burst_count(int64_t lines, int64_t chunks, int64_t max_burst_lines) {
        const int64_t by_size = (lines + max_burst_lines - 1) / max_burst_lines;
        const int64_t by_chunk = chunks >= 4 ? std::min(chunks, lines / 32) : 1;
        return std::min(chunks, std::max(by_size, by_chunk));
    }
};

// The plans of the tile heights one kernel uses (int8_dot_rows' RowsOne, RowsMany and the
// single leftover rows) for one matrix, built per call of the kernel: only those heights.
template <int... Heights>
class TilePrefetchPlans {
public:
    TilePrefetchPlans(size_t row_bytes, int64_t chunks, int64_t max_burst_lines = kPrefetchBurstLines,
                      bool stream = false)
        : plans_{TilePrefetchPlan(Heights, row_bytes, chunks, max_burst_lines, stream)...} {}
    template <int R>
    const TilePrefetchPlan& for_rows() const {
        constexpr size_t i = index_of(R);
        static_assert(i < sizeof...(Heights), "a tile height the plans were not built for");
        return plans_[i];
    }

private:
    static constexpr size_t index_of(int rows) {
        size_t i = 0;
        for (int h : {Heights...}) {
            if (h == rows) return i;
            ++i;
        }
        return i;
    }
    TilePrefetchPlan plans_[sizeof...(Heights)];
};

// prefetcht<Hint> (0: into L1, 2: into L2) of the lines [line, end), line < end. The loop is
// one asm statement so that the compiler sees no loop inside the tile's chunk loop: as C++ it
// made GCC spill the 4 x 3 4-bit tile's vectors in every code step (68 stack accesses; prefill
// 128 q4_0 373-435 -> 314-332 tok/s).
template <int Hint>
[[gnu::always_inline]] inline void prefetch_lines(const uint8_t* line, const uint8_t* end) {
    static_assert(Hint == 0 || Hint == 2, "prefetcht0 or prefetcht2");
    asm volatile(
        "1:\n\t"
        "prefetcht%c2 (%0)\n\t"
        "add $64, %0\n\t"
        "cmp %1, %0\n\t"
        "jb 1b"
        : "+r"(line)
        : "r"(end), "i"(Hint)
        : "cc");
}

// A burst [line, end) into L1 (to_l1: the plan's choice for this CPU) or L2.
struct PrefetchLines {
    void operator()(const uint8_t* line, const uint8_t* end, bool to_l1) const {
        if (to_l1)
            prefetch_lines<0>(line, end);
        else
            prefetch_lines<2>(line, end);
    }
};

// Software prefetch of the next tile while this one runs: the R rows after the tile's (rows are
// contiguous, wrow[i] = wrow[0] + i * row_bytes, as int8_dot_rows lays them out), codes and
// scale planes alike, as ascending 64-byte lines into L2 (prefetcht2; L1 on Zen 5), in bursts
// (the plan's) spread evenly over the tile's chunks. What was here before, one non-temporal
// prefetch per code line R rows ahead plus the scale planes' lines, streamed a decode's matrices
// at 20-24 GB/s where this reaches 30-36 (kernels_bench / a 2-thread A/B on Zen 4, alternating call by
// call; the 0.8B q8_0 decode 26-27 -> 38-48 tok/s, q4_0 40-41 -> 60-65). Both parts count:
// with prefetcht0 bursts the same decode ran 38-40 tok/s and with non-temporal ones 40, and
// per-line prefetcht2 kept 36-38.
// Only the first column group (j0 == 0) prefetches: the later groups of a wide batch walk the
// same 16-row block again, already in cache, and their prefetches cost prefill 512 about 12%.
// Fetch: what issues a burst of lines [line, end), into L1 when to_l1 (a test records them
// instead).
template <class Fetch = PrefetchLines>
class NextTilePrefetch {
public:
    // Issues the first burst at once (before the tile's chunk loop), or nothing when j0 > 0 or
    // the plan streams (StreamPrefetch does the fetching then).
    // ahead: which tile after this one to fetch (1: the next; 2: the one after, for a tile that
    // computes long enough per byte that one tile's lead does not cover the memory's latency).
    NextTilePrefetch(const TilePrefetchPlan& plan, const uint8_t* const* wrow, int64_t j0,
                     Fetch fetch = {}, int ahead = 1)
        : plan_(plan),
          next_(wrow[0] + ahead * plan.tile_bytes),
          end_(next_ + plan.tile_bytes),
          due_chunk_(j0 == 0 && !plan.stream ? 0 : -1),
          fetch_(fetch) {
        at_chunk(0);
    }

    // Call at the start of every chunk, ch = 0, 1, ..., chunks - 1: a burst goes out every
    // chunk_step chunks until the whole tile has.
    void at_chunk(int64_t ch) {
        if (ch != due_chunk_) return;
        const uint8_t* stop = end_ - next_ > plan_.burst_bytes ? next_ + plan_.burst_bytes : end_;
        fetch_(next_, stop, plan_.to_l1);
        next_ = stop;
        due_chunk_ = next_ < end_ ? due_chunk_ + plan_.chunk_step : -1;
    }

private:
    const TilePrefetchPlan& plan_;
    const uint8_t* next_;  // the next line to prefetch
    const uint8_t* end_;   // the end of the next tile
    int64_t due_chunk_;    // the chunk at which the next burst is due (-1: none)
    [[no_unique_address]] Fetch fetch_;
};

// A streaming tile's prefetches (On: TilePrefetchPlan::stream): each code line it loads and,
// at its last chunk, its rows' scale planes, kStreamAheadBytes further on. Rows are contiguous
// and a thread's rows are consecutive, so this runs ahead through the thread's stream (and a
// few KB past its end, into rows the other thread reads). Only the first column group (j0 ==
// 0) fetches, as for bursts. prefetcht2: the lines go to L2, as the bursts' do.
template <bool On>
class StreamPrefetch {
public:
    StreamPrefetch(const TilePrefetchPlan& plan, int64_t j0) : first_group_(j0 == 0), row_bytes_(plan.row_bytes) {}

    [[gnu::always_inline]] void line(const uint8_t* p) const {
        if constexpr (On)
            if (first_group_) __builtin_prefetch(p + kStreamAheadBytes, 0, 1);
    }
    // The scale planes [planes_off, row_bytes) of rows wrow[0..rows).
    [[gnu::always_inline]] void planes(const uint8_t* const* wrow, int rows, size_t planes_off) const {
        if constexpr (On)
            if (first_group_)
                for (int r = 0; r < rows; ++r)
                    for (size_t o = planes_off; o < row_bytes_; o += 64)
                        __builtin_prefetch(wrow[r] + o + kStreamAheadBytes, 0, 1);
    }

private:
    bool first_group_;
    size_t row_bytes_;
};

// Rows [r0, r1) of a chunked matrix for n columns: rows in chunks (16 rows, the unit matmul
// hands a thread, or more for a wide batch, below; a chunk stays in cache while column groups
// pass over it), columns in groups of up
// to MaxCols, rows in tiles of RowsOne (a single column) or RowsMany rows, leftover rows one at
// a time. tile.template operator()<R>(c, wrow, j0, r) runs rows [r, r + R) (wrow: their
// starts) for columns [j0, j0 + c).
template <int MaxCols, int RowsOne, int RowsMany, class Tile>
void int8_dot_rows(const WeightMatrix& w, int64_t n, int64_t r0, int64_t r1, Tile&& tile) {
    const uint8_t* wrow[RowsOne > RowsMany ? RowsOne : RowsMany];
    // A batch whose activation codes outgrow L2's share for them (over 256 KB: a prefill of
    // hundreds of tokens) walks chunks of up to 256 KB of weights instead of 16 rows, so that
    // each column group's activations are read once per chunk, not once per 16 rows. In one
    // process, alternating: 1024 x 3584 and 3584 x 1024 at width 512 0.96-0.98x the time; width
    // 128, 8 and 1 keep 16 rows (0.99-1.01x).
    constexpr size_t kChunkBytes = size_t(256) << 10;
    const int64_t chunk_rows =
        size_t(n * w.cols) <= kChunkBytes ? 16 : std::max<int64_t>(16, int64_t(kChunkBytes / w.row_bytes) / 16 * 16);
    for (int64_t c0 = r0; c0 < r1; c0 += chunk_rows) {
        const int64_t c1 = c0 + chunk_rows < r1 ? c0 + chunk_rows : r1;
        for (int64_t j0 = 0; j0 < n; j0 += MaxCols) {
            const int c = int(n - j0 < MaxCols ? n - j0 : MaxCols);
            const int R = c == 1 ? RowsOne : RowsMany;
            int64_t r = c0;
            for (; r + R <= c1; r += R) {
                for (int i = 0; i < R; ++i) wrow[i] = w.data + size_t(r + i) * w.row_bytes;
                if (c == 1)
                    tile.template operator()<RowsOne>(c, wrow, j0, r);
                else
                    tile.template operator()<RowsMany>(c, wrow, j0, r);
            }
            for (; r < c1; ++r) {
                wrow[0] = w.data + size_t(r) * w.row_bytes;
                tile.template operator()<1>(c, wrow, j0, r);
            }
        }
    }
}

}  // namespace
}  // namespace nextn::x86
