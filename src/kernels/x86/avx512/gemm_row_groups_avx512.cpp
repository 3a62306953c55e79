// AVX-512 VNNI: Q4_0R, Q8_0R, Q4_KR, Q5_KR, Q6_KR (and Q3_KR, Q2_KR, and the table types) weights
// (16-row groups, one row per int32 lane: kernels/row_groups.h) times int8 activations. A tile is
// RG groups x C columns: each 64-byte code vector of a group is loaded once and meets every
// column's broadcast activation codes with one vpdpbusd (Q4_0R, Q4_KR, Q5_KR: its low and high
// nibbles, two; Q5_KR's fifth bits or-ed in first), and a block ends with one convert + fused
// multiply-add per (group, column) (Q4_KR and Q5_KR: two, the second for their mins; the 16 rows'
// scales built from the super-block's f16 d, dmin and the block's 6-bit sc, mn first). Q6_KR
// (q6_k_block): each step's 6-bit codes rebuilt from a low-nibble and a high-bit vector, the two
// sub-blocks summed apart and joined by their int8 scales before the convert.
// No lane reduction: lane r of a group's accumulator is row r's sum, stored as it is.
//
// Prefetch: on AMD a call first fetches its first kPrefetchAheadBytes into L1 at once; then the
// column passes over each tile fetch the lines kPrefetchAheadBytes ahead of where it reads, a
// cursor that moves as fast as the passes consume the tile (a block's codes and scales a group: 288
// for Q4_0R, shared among a verify's passes: kCursorSpreadUpTo) and stops at the end of the
// call's rows. A call covers a share of the rows that the pool hands out (shrinking shares, so
// the next rows in memory usually go to the other thread). Which of the cursor and the group
// streams (below) serves AMD better changes with the memory's state: 0.8B forwards alternating in
// one process on the Zen 5 VM (session 45), group streams over the cursor, Q4_0R width 1 0.84-0.86
// in one spell and 1.09-1.16 in another, Q8_0R width 1 0.94-0.97 and 1.16. So on AMD the model
// times both while decoding and runs each forward shape on the faster (model/kernel_chooser.h).
// On Zen 5 the group streams' entry reads the narrowest Q4_0R and Q8_0R products as
// HardwareStream instead (kHardwareStreamUpTo), which the model times against the cursor the same
// way. The paired layout (kernels/row_groups.h, session 51) made the cursor itself faster there:
// tools/kernel_ab against session 50's layout, Q8_0R width 1 0.881, Q4_0R width 1 0.939, Q8_0R
// width 4 0.995, Q4_0R width 4 1.011.
//
// Measured with tools/layout_ab (the 0.8B model chunked and in row groups, forwards alternating
// in one process) on the 2-core Zen 5, row-group time over chunked time:
//   Q4_0R: width 1 0.895, 0.911, 0.989 (1500 forwards each); width 2 0.976; width 4 0.933;
//          prefill of 128 0.83-0.92.
//   Q8_0R: width 1 0.990, 0.992, 1.001; width 2 0.978; width 4 0.941, 0.954; prefill 0.866.
// Width-1 Q4_0R variants, 400 forwards each: the cursor alone (fetching past the call) 4 KB ahead
// 1.05, 8 KB 1.00, 16 KB 0.98, 24 KB 0.96-1.05, 32 KB 1.03; bursts of the group two ahead 1.10; a
// second cursor into L2 48-64 KB ahead 1.18; with the first 24 KB fetched into L2 instead of L1
// 0.975-0.99 (L1: 0.935-0.993); with the cursor 16 KB ahead 0.95-0.98, 32 KB 0.99-1.04; stopping
// at the call's end without the first fetch 1.01-1.03.
// On a 2-core Sapphire-Rapids-class Xeon VM that first fetch cost time instead (its 384 prefetches
// wait for line fill buffers, and a Xeon has fewer outstanding L1 misses): kernel_ab, without it
// over with it, Q4_0R width 1 0.987, 0.936, 0.992, width 4 0.989, Q8_0R width 1 0.993.
//
// Off AMD, narrow matmuls (up to 16 columns) read group streams (GroupStreams): each tile takes two
// groups (three or four up to 8 columns: group_stream_tile_groups), and each group's codes and
// scales are prefetched kGroupStreamAheadBytes ahead of where that group reads, in place of the
// one cursor. The same Xeon reads one stream at 21.5 GB/s (2
// threads, prefetch 4 KB ahead) but two interleaved ones at 25, four at 26-27 (its L2 streamer
// follows several pages at once), and the read probe (stream_sum) reads four. kernel_ab, 0.8B
// forwards, streams over the cursor: Q8_0R width 1 0.896, 0.885, 0.932 (2, 3, 4 KB ahead; 1 KB
// 0.939), width 2 0.921, width 4 0.932, width 6 0.921, width 8 0.916; Q4_0R width 1 0.931-0.938
// (1-3 KB), 0.967 (4 KB). Not kept: four groups a tile (Q8_0R width 1 0.996, Q4_0R 1.049); the
// group streams with one group a tile (Q8_0R width 2 1.025, Q4_0R width 2 1.094); Q4_0R from width
// 2 on, where the nibble unpacking makes the tiles compute longer per byte (width 2 0.982, 1.003,
// width 3 1.016, width 4 1.022-1.062, width 8 1.034).
// Session 26, same Xeon: each group's code lines are also prefetched into L2 kGroupStreamFarBytes
// ahead, as the read probe does: the L1 prefetches (and the tiles' own misses) hold line fill
// buffers, of which a core has few; the L2 ones hold them only briefly, and keep more of each
// stream in flight. With them the group streams serve every width up to 16 for both types.
// kernel_ab over the previous session's kernel: Q4_0R width 1 0.906-0.943 (16 KB ahead 0.959, 24 KB
// 0.948, 48 KB 0.942, 64 KB 0.955; 32 KB without the L1 prefetches 0.961), width 2 0.873, width 4
// 0.912-0.943, width 8 0.968, width 16 0.904; Q8_0R width 1 0.994-1.006 (every other line 1.117;
// only each page's first two lines 1.000), width 4 0.950, width 8 0.970, width 16 0.987. The 2B's
// longer groups (16 KB of 4-bit codes) gain nothing: Q4_0R width 1 0.997-1.014 (64 KB ahead 0.997,
// 16 KB 1.027), Q8_0R 1.019. Not kept: four groups a tile at width 1 (Q8_0R 0.971-0.976, 16 KB
// ahead 1.006; Q4_0R 0.935), the L1 prefetches 1 or 4 KB ahead (Q8_0R 1.061, 1.032).
#pragma GCC optimize("fp-contract=off")
#include <algorithm>
#include <bit>
#include <cstring>

#include "kernels/int8_dot.h"
#include "kernels/row_groups.h"
#include "kernels/x86/avx512/isa_avx512.h"
#include "kernels/x86/int8_dot_tiles.h"
#include "kernels/x86/x86_kernels.h"

namespace nextn::avx512 {

namespace {

constexpr int kMaxTileCols = 4;
// Columns a pass where the tiles read group streams (off AMD, up to kGroupStreamsUpTo columns):
// a verify of 5 to 8 positions goes in one pass instead of 4 + the rest, and 9 to 16 in passes
// of 8. A second pass over the same groups loads them again from cache, unpacks the nibbles
// again and runs short dot-product chains; at width 5 its single column cost as much as the other
// four. On the 2-core Sapphire-Rapids-class VM (0.8B forwards alternating in one process), one
// pass against passes of 4: Q4_0R width 5, 6, 7, 8 0.89, 0.875, 0.875, 0.90x the forward's time
// (its matrix products 0.84-0.87x), Q8_0R 0.96, 0.95, 0.92, 0.975x; passes of 8 at width 10, 12,
// 16: Q4_0R 0.90, 0.94, 0.93x, Q8_0R (12, 16) 0.97, 0.94x. tools/kernel_ab against passes of 4:
// 0.8B Q4_0R width 5 0.901; 2B Q4_0R width 5 0.869, width 8 0.853, Q8_0R width 5 0.923. A
// prefill (128 tokens, cursor) in passes of 8 took 1.13-1.17x the time (1.13-1.14x with one
// group a tile, whose sums then fit the registers), so the cursor's calls keep passes of 4
// (kLoneColumnJoins: but not a pass of one column).
constexpr int64_t kWideTileCols = 8;
// Above this many columns a tile takes two groups, each activation broadcast then serving both;
// up to it, one group, whose single stream the prefetch cursor covers exactly (with two groups
// the cursor falls behind the second group of long rows). tools/layout_ab, row-group time over
// chunked time with one group / two groups a tile: Q4_0R width 5 0.988 / 1.000, width 6 0.992 /
// 0.921, width 8 0.955 / 0.907, prefill 128 1.08 / 0.83-0.92; Q8_0R width 2 0.978 / 1.065, width
// 4 0.94-0.95 / 1.06, width 8 0.890 / 0.978, prefill 0.866 with two. Cached (a 256-row matrix in
// L2, one thread, width 4), two groups take 0.74x the time of one for Q4_0R and 0.80x for Q8_0R:
// where memory is fast, verify is bound by the dot products. kernel_ab, Q4_0R two groups against
// one in slow spells: width 4 0.974, 0.986; width 2 1.009. So Q4_0R pairs from width 4 on.
// (A prefetch of each group's own stream a fixed number of blocks ahead, instead of the linear
// cursor, took 1.10-1.22x the chunked time at widths 2 and 4: not kept.)
template <WType T>
constexpr int64_t kPairedGroupsAbove = T == WType::Q8_0R ? 8 : 3;
constexpr int64_t kPrefetchAheadBytes = 24576;
// Up to this many columns every column pass over a tile moves the cursor, each through its share
// of the tile's bytes; above it (a prefill) only the first pass does. When the first pass alone
// fetched, memory idled while a verify's later passes computed, the fault the 256-bit kernels had
// (x86/row_groups_256.h). The cursor runs on AMD, which was not available to measure this; on the
// 2-core Xeon VM with the cursor forced at every width (tools/kernel_ab, 0.8B forwards, shares
// over the first pass alone): Q4_0R width 5 0.950, 6 0.917, 8 0.871, 12 0.923, 16 0.924; Q8_0R
// width 5 0.942, 8 0.876; Q4_K_M width 8 0.853; width 4 (one pass) 1.007. A prefill of 128 with
// the first two of its 32 passes sharing took 1.010x.
constexpr int64_t kCursorSpreadUpTo = 16;
// The cursor's column passes over a tile, up to kCursorSpreadUpTo columns: of kMaxTileCols, but
// a lone last column joins the pass before it (5 = one pass of 5, 9 = 4 + 5). A pass of one
// column loads the tile's codes again, unpacks them again and runs its dot products for one
// column alone: in width-5 Q4_K_M forwards (the 5-column verify of MTP depth 4) Q4_KR's
// one-column passes took half the samples its four-column passes took (perf, session 54).
// Session 54, the 2-core Zen 5 VM, tools/kernel_ab against passes of 4 + 1 (0.8B, the cursor):
// Q4_K_M width 5 0.908, 0.937 (its Q4_KR and Q6_KR unpack the most); Q4_0R width 5 0.972, 1.005,
// width 9 (4 + 5) 0.984; the 2B at width 5, Q4_K_M 0.806, Q4_0R 0.943. One pass of 5 for Q8_0R
// 1.017, 1.035 (the 2B 0.957), so Q8_0R (no codes to unpack: its second pass only loads them
// from cache) keeps 4 + 1.
// Wider single passes lost: width 8 in one pass against 4 + 4, Q4_K_M 1.050, Q4_0R 1.055 (the
// sums spill); width 6 Q4_K_M 0.998.
template <WType T>
constexpr bool kLoneColumnJoins = T != WType::Q8_0R;

// How the tiles of a call prefetch (header): Cursor kPrefetchAheadBytes ahead, GroupStreams
// each group's own codes and scales kGroupStreamAheadBytes of codes ahead (and its codes
// kGroupStreamFarBytes ahead into L2).
using Fetch = RowGroupFetch;
constexpr int64_t kGroupStreamAheadBytes = 2048;
// Q4_0R tiles of 4 or more columns compute longer per byte (the nibbles' two dot products per
// column), so 1 KB ahead reaches L1 in time there. Session 30, kernel_ab against 2 KB: Q4_0R width 4
// 0.985, 0.994, 0.979 (512 bytes 0.987; 4 KB 1.038), width 5 0.987, width 8 0.992; widths 2 and 3
// 0.999, 0.995 and Q8_0R width 4 1.005 (two blocks ahead), so those keep 2 KB.
template <WType T, int C>
constexpr int64_t kGroupStreamAheadBytesFor = T != WType::Q8_0R && C >= 4 ? 1024 : kGroupStreamAheadBytes;
// Into L2, 16 KB per group of the tile (at least 32 KB). kernel_ab, 64 KB against 32 KB for
// four-group tiles: Q4_0R width 1 0.986, 0.989, Q8_0R width 1 0.958, 0.960 (48 KB: Q4_0R 0.988,
// 96 KB 1.001); for two-group tiles 64 KB took longer (Q4_0R width 4 1.026, Q8_0R 1.000); for
// three-group tiles 48 KB and 32 KB measured the same (Q4_0R width 4 0.958-0.970, 0.960).
template <int RG>
constexpr int64_t kGroupStreamFarBytes = std::max(32768, 16384 * RG);
// The widest matmul that reads group streams: off AMD, and on AMD in the avx512 table's timed
// alternative, which the model runs where it times faster (kernels/kernels.h; the better of the
// two changes there with the memory's state).
constexpr int64_t kGroupStreamsUpTo = 16;

// Zen 5 reads the paired types' narrow products as HardwareStream: one group a tile, each group
// read in order as the one stream it is (kernels/row_groups.h), and no software prefetch after
// the call's first kPrefetchAheadBytes. There the hardware prefetcher alone serves one stream at
// about twice the rate it serves two (a group's codes and, with the old layout, its scales
// after them), and the per-line prefetches of the cursor and the group streams cost more than
// they bring. Session 51, the 2-core Zen 5 VM, a token's matmuls of the 0.8B (the paired layout
// in both), alternating in one process, time over the group streams' (then the better way):
// Q8_0R width 1 0.94, 0.95 in fast spells, 0.93 in a middling one; width 2 0.735; width 4 0.85,
// 0.89; Q4_0R width 1 0.99, 0.89, 0.94; width 2 0.99. Whole forwards (tools/kernel_ab against
// session 50's group streams): Q4_0R width 1 0.925, width 3 0.943 (one group a tile), width 4
// 0.996, so Q4_0R keeps the group streams from width 4 on (there its tiles share each activation
// broadcast among three groups; with two groups a tile on one stream each it took 2.1x the time).
// The K-quants are one stream a group too since session 55 (their spans: kernels/row_groups.h),
// but that session ran on the Xeon, where a stream without software prefetch reads at 60% of the
// probe (Q4_K_M width 1, either layout) against 81% with the group streams; whether Zen 5 reads
// them faster this way is not measured yet, so they keep the group streams there (0 below).
template <WType T>
constexpr int64_t kHardwareStreamUpTo = T == WType::Q8_0R   ? 4
                                        : T == WType::Q4_0R ? 3
                                                            : 0;

template <WType T>
Fetch fetch_for(int64_t n, Fetch asked) {
    if (asked == Fetch::ForThisCpu) asked = x86::tiles_tuned_as_amd() ? Fetch::Cursor : Fetch::NarrowGroupStreams;
    if (asked == Fetch::NarrowGroupStreams) {
        if (n <= kHardwareStreamUpTo<T> && x86::amd_zen5_or_later()) return Fetch::HardwareStream;
        return n <= kGroupStreamsUpTo ? Fetch::GroupStreams : Fetch::Cursor;
    }
    return asked;
}
// n rounded up to a multiple of m.
constexpr int64_t ceil_to(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Q4_0R, Q4_KR and Q5_KR: 4-bit codes, two nibbles a byte (Q5_KR: and a plane of fifth bits).
template <WType T>
constexpr bool kFourBit = T == WType::Q4_0R || T == WType::Q4_KR || T == WType::Q5_KR ||
                          row_group_table_codes(T);

// Group-stream tiles take four groups instead of two at the narrowest widths, three up to 8
// columns. Four streams of codes in flight instead of two keep more of the memory busy (the read
// probe reads four). On the 2-core Sapphire-Rapids-class VM, tools/kernel_ab against two groups
// (0.8B unless said):
// Q4_0R width 1 0.913-0.943 (2B 0.930), width 2 0.944, width 3 0.979, width 4 0.960 and 1.040
// (sixteen sums then spill: also in pairs of groups, 1.104); Q8_0R width 1 0.954, width 2 0.989,
// width 4 1.018. Eight groups a tile: Q4_0R width 1 1.122. Matrix products alone, alternating
// with a read of as many bytes as the probe reads them: 0.87-0.92 of its rate with four groups
// at width 1, 0.94-0.97 with the 64 KB prefetch below and three groups; was 0.79-0.86.
// Not kept either: one group's codes unpacked at a time with each column's 8 dot products in
// one chain (width 4 Q4_0R 1.143, Q8_0R 1.064); the L2 prefetch as one cursor over the tile's
// bytes, scales included, instead of each group's code stream (width 1 1.155).
// Three groups a tile from there up to 8 columns (the sums of 3 x 8 columns spill to the stack,
// and it still gains): kernel_ab against two groups, Q4_0R width 4 0.958-0.970, 5 0.990, 8
// 0.975; Q8_0R width 2 0.955, 4 0.954, 5 0.960, 8 0.968; at width 16 (passes of 8) Q4_0R 1.009,
// and at width 3 Q4_0R 1.019 against four.
// Q6_KR keeps two sums a (group, column), one per sub-block, next to the accumulator, so from
// width 4 three groups' sums spill to the stack; still, the same rule with four groups at width
// 1 beats tiles sized to the 32 registers (two groups up to 4 columns, then one). Session 38,
// tools/kernel_ab q4_k_m (llama.cpp's mix, its Q6_K ffn_down, attn_qkv and LM head), 0.8B
// forwards: width 3 0.989, 4 0.982, 5 0.923 (two groups 0.938), 8 0.957 (two 0.958); two groups
// against one at width 12 0.998, at width 16 0.972.
// Session 59 (same VM class, CPUID family 6 model 167): the 4-bit types take four groups at
// width 4 too, and up to 8 columns where rows are longer than 2048 values. The 9B's cost(4) had
// jumped from 1.04 at width 3 to 1.20: at width 4 a three-group tile's instructions (the same 12
// (group, column) pairs as four groups at width 3, but 4/3 the work a byte) read a [4096 x 12288]
// Q4_0R from L3 at 44 GB/s on 2 threads, four groups (its 16 sums spilling) at 49. kernel_ab,
// against three groups: width 4 0.8B Q4_0R 0.982-0.986, 2B 0.983, 9B 0.904, Q4_K_M 0.8B 0.992, 9B
// 0.948. Widths 5-8, rows over 2048 values (the 0.8B's and 2B's FFN down, every 9B matrix): 9B
// Q4_0R width 5 0.902, 8 0.940, Q4_K_M width 5 0.946; 0.8B Q4_0R width 5 0.994, 6 0.994, 7 1.003,
// 8 1.000; 2B width 5 0.999, 8 0.991. Shorter rows keep three groups there: a harness timing one
// matrix at widths 1-8 (copies rotated through 1.2 GB) put four groups at [6144 x 1024] and [6144
// x 2048] widths 7-8 1.02-1.09x the time of three, the LM head [248320 x 1024] 1.03x. (Q5_KR, which
// no synthetic model holds, follows Q4_KR's tiles unmeasured.)
template <WType T>
constexpr int64_t kFourGroupsUpTo = T == WType::Q8_0R || row_group_sub_block_sums(T) ? 1 : 4;
constexpr int64_t kThreeGroupsUpTo = 8;
constexpr int64_t kFourGroupsLongRowsAbove = 2048;  // values a row (cols)
template <WType T>
constexpr int64_t group_stream_tile_groups(int64_t n, int64_t cols) {
    if (n <= kFourGroupsUpTo<T>) return 4;
    if (kFourBit<T> && n <= kThreeGroupsUpTo && cols > kFourGroupsLongRowsAbove) return 4;
    return n <= kThreeGroupsUpTo ? 3 : 2;
}

// Independent dot-product chains per (group, column) and block: two in one-group tiles, one in
// tiles of two or more groups (two-group tiles have 8 chains already, and no registers for 16).
// A 256 x 1024 matrix in L2, one thread, two chains against one: Q4_0R width 1 2.65 against 3.39 us, 256 x 3584 width 4
// 14.7 against 21.4 us, Q8_0R width 4 4.22 against 7.23 us, width 1 5.07 against 6.40 us
// (Q4_0R 1024 width 4 unchanged); four chains gained nothing (3584 width 4: 20.5 us).
template <int RG>
constexpr int kChains = RG == 1 ? 2 : 1;

template <int K, int RG, int C>
[[gnu::always_inline]] inline __m512i block_sum(const __m512i (&isum)[K][RG][C], int g, int c) {
    if constexpr (K == 2) return _mm512_add_epi32(isum[0][g][c], isum[1][g][c]);
    return isum[0][g][c];
}

// Block b of a tile of Q6_KR groups g .. g+RG-1 (at `group`) times C columns (codes xc, the two
// sub-blocks' starts xstart and xstart_second, scales xd): each step's codes are rebuilt once per
// group and meet every column; steps 0..3 and 4..7 (the sub-blocks) sum apart, from -32 x their
// activation code sums, and are joined exactly by their int8 scales (Q6_KX's arithmetic,
// x86/int8_dot_tiles.h). Step s (0..7) of a Q6_KR block's codes (at `codes`: 256 bytes of low
// nibbles, then 128 of high bits) as 64 bytes of 6-bit codes.
// Q3_KR (codes: 128 bytes of low 2 bits, then 64 of high bits) its 3-bit codes + 28, so that
// Q6_KR's arithmetic (offset 32) serves it. With GFNI, two bit-matrix products a step (each
// byte's bits moved where they go, the high bit spread over bits 2..5 and flipped by 0x1C in
// bits 2..4: code3 + 28 is low | (high ? 0x20 : 0x1C)) and an or, where shifts and masks take six
// operations on the dot products' ports.
// Q2_KR (codes: 128 bytes of 2-bit codes, as Q3_KR's low bits) its codes 0..3 (with GFNI one
// bit-matrix product a step, where a shift and a mask take two operations).
// (gfni_affine, gfni_bit_matrix: isa_avx512.h.)
template <WType T, bool Gfni>
[[gnu::always_inline]] inline __m512i q6_k_step(const uint8_t* codes, int s) {
    if constexpr (T == WType::Q2_KR) {
        const __m512i two_bits = _mm512_load_si512(codes + (s / 4) * 64);
        if constexpr (Gfni)
            return gfni_affine<0>(two_bits, _mm512_set1_epi64(gfni_bit_matrix(2 * (s % 4), 0, 2)));
        return x86::q2_step_codes<Isa>(two_bits, s);
    }
    if constexpr (T == WType::Q3_KR) {
        const __m512i two_bits = _mm512_load_si512(codes + (s / 4) * 64),
                      high = _mm512_load_si512(codes + 128);
        if constexpr (Gfni) {
            const __m512i low =
                gfni_affine<0>(two_bits, _mm512_set1_epi64(gfni_bit_matrix(2 * (s % 4), 0, 2)));
            const __m512i top =
                gfni_affine<0x1C>(high, _mm512_set1_epi64(gfni_bit_matrix(s, 2, 4, true)));
            return _mm512_or_si512(low, top);
        }
        return x86::q3_step_codes<Isa>(two_bits, high, s);
    }
    return x86::q6_step_codes<Isa>(_mm512_load_si512(codes + (s / 2) * 64),
                                   _mm512_load_si512(codes + 256 + (s / 4) * 64), s);
}

// Q2_KR's sums start at 0 (its codes have no offset); its block ends with Q6_KR's scaling, its
// 4-bit scales taken from the block's pairs of scale bytes, and then its mins' term: one vpdpwssd
// of the rows' two mins (int16 pairs) by the block's two activation half sums (xpairs), as
// Q4_KR's mins, -dmin * dx.
template <WType T, bool Gfni, int RG, int C, bool kUnpacked>
[[gnu::always_inline]] inline void q6_k_block(const RowGroupGeometry& L, const uint8_t* group,
                                              int64_t b, const int8_t* const (&xc)[C],
                                              const int32_t* const (&xstart)[C],
                                              const int32_t* const (&xstart_second)[C],
                                              const int32_t* const (&xpairs)[C],
                                              const float* const (&xd)[C], const uint8_t* unpacked,
                                              __m512 (&acc)[RG][C]) {
    __m512i isum[2][RG][C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        if constexpr (T == WType::Q2_KR) {
#pragma GCC unroll 4
            for (int g = 0; g < RG; ++g)
                isum[0][g][c] = _mm512_setzero_si512(), isum[1][g][c] = _mm512_setzero_si512();
            continue;
        }
        // Broadcast loads of the starts made at quantization (computing them here took five
        // operations on the dot products' ports; session 40, Xeon, BM_KQuantRowGroupsPrefill
        // Q6_KR width 16 / 128 0.89x / 0.88x the time, kernel_ab q4_k_m prefill 128 0.977, width 4
        // from memory 1.003).
        const __m512i first = _mm512_set1_epi32(xstart[c][b]);
        const __m512i second = _mm512_set1_epi32(xstart_second[c][b]);
#pragma GCC unroll 4
        for (int g = 0; g < RG; ++g) isum[0][g][c] = first, isum[1][g][c] = second;
    }
    const int64_t xoff = (b / kI8ChunkBlocks) * kI8ChunkValues + 4 * (b % kI8ChunkBlocks);
#pragma GCC unroll 8
    for (int s = 0; s < kI8Steps; ++s) {
        __m512i code[RG];
#pragma GCC unroll 4
        for (int g = 0; g < RG; ++g) {
            if constexpr (kUnpacked) {
                code[g] = _mm512_load_si512(unpacked + ((g * L.blocks + b) * kI8Steps + s) * 64);
            } else {
                code[g] =
                    q6_k_step<T, Gfni>(group + g * L.group_bytes + row_group_codes_at(T, b), s);
            }
        }
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            int32_t v;
            std::memcpy(&v, xc[c] + xoff + s * 64, 4);
            const __m512i xs = _mm512_set1_epi32(v);
#pragma GCC unroll 4
            for (int g = 0; g < RG; ++g) isum[s / 4][g][c] = _mm512_dpbusd_epi32(isum[s / 4][g][c], code[g], xs);
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < RG; ++g) {
        const uint8_t* super = group + g * L.group_bytes + row_group_super_scales_at(T, b);
        const uint8_t* sc = group + g * L.group_bytes + row_group_block_scales_at(T, b);
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(super)));
        if constexpr (T == WType::Q2_KR) {
            // Lane r: its two scale bytes widened to 16 bits each (sc | mn << 4).
            const __m512i bytes =
                _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc)));
            const __m512i scales = _mm512_and_si512(bytes, _mm512_set1_epi16(15));
            const __m512 sca =
                _mm512_cvtepi32_ps(_mm512_and_si512(scales, _mm512_set1_epi32(0xFFFF)));
            const __m512 scb = _mm512_cvtepi32_ps(_mm512_srli_epi32(scales, 16));
            const __m512i mins = _mm512_srli_epi16(bytes, 4);  // lane r: mn_a | mn_b << 16
            const __m512 dmin = _mm512_xor_ps(
                _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(super + 32))),
                _mm512_set1_ps(-0.0f));
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) {
                const __m512 dx = _mm512_set1_ps(xd[c][b]);
                acc[g][c] = x86::scale_chunk_q6<Isa>(isum[0][g][c], isum[1][g][c], sca, scb, dw, dx,
                                                     acc[g][c]);
                const __m512i mi = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mins,
                                                       _mm512_set1_epi32(xpairs[c][b]));
                acc[g][c] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(mi), _mm512_mul_ps(dmin, dx), acc[g][c]);
            }
            continue;
        }
        const __m512 sca = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc))));
        const __m512 scb = _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16))));
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c)
            acc[g][c] = x86::scale_chunk_q6<Isa>(isum[0][g][c], isum[1][g][c], sca, scb, dw, _mm512_set1_ps(xd[c][b]),
                                                 acc[g][c]);
    }
}

// Steps i (the low nibbles, 0..3) and 4 + i (the high ones) of the Q4_0R, Q4_KR, Q5_KR, IQ4_NLR or
// MXFP4R block whose codes start at `codes`, 16 rows x 4 codes each (Q5_KR: its fifth bits or-ed
// in; the table types: each nibble replaced by its table code, a byte shuffle within each 16-byte
// lane, as the table is 16 bytes).
template <WType T, bool Gfni>
[[gnu::always_inline]] inline void nibble_steps(const uint8_t* codes, int i, __m512i low_mask,
                                                __m512i shift_matrix, __m512i& lo, __m512i& hi) {
    const __m512i v = _mm512_load_si512(codes + i * 64);
    lo = _mm512_and_si512(v, low_mask);
    hi = high_nibbles<Gfni>(v, low_mask, shift_matrix);
    if constexpr (row_group_table_codes(T)) {  // IQ4_NLR, MXFP4R: each nibble indexes the table
        const __m512i table = _mm512_broadcast_i32x4(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(row_group_code_table(T))));
        lo = _mm512_shuffle_epi8(table, lo);
        hi = _mm512_shuffle_epi8(table, hi);
    }
    if constexpr (T == WType::Q5_KR) {
        const __m512i fifth = _mm512_load_si512(codes + 256);
        lo = _mm512_or_si512(lo, x86::q5_fifth_bits<Isa>(fifth, i));
        hi = _mm512_or_si512(hi, x86::q5_fifth_bits<Isa>(fifth, 4 + i));
    }
}

// Q4_KR / Q5_KR block b of the group at `group`: its 16 rows' weight scales dw = d * sc and
// their mins' factors dm = -(dmin * mn) (exact products, the negation by the sign bit).
struct AffineScales {
    __m512 dw, dm;
};
template <WType T>
[[gnu::always_inline]] inline AffineScales affine_k_scales(const uint8_t* group, int64_t b) {
    const uint8_t* super = group + row_group_super_scales_at(T, b);
    const uint8_t* sc_mn = group + row_group_block_scales_at(T, b);
    auto u8_lanes = [](const uint8_t* p) {
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(p))));
    };
    const __m512 dw =
        _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(super))), u8_lanes(sc_mn));
    const __m512 dm = _mm512_xor_ps(
        _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(super + 32))),
                      u8_lanes(sc_mn + 16)),
        _mm512_set1_ps(-0.0f));
    return {dw, dm};
}

// The bytes of a tile of n_groups groups' unpacked codes ([n_groups, blocks, kI8Steps, 64]), after
// which its unpacked Q4_KR / Q5_KR scales start.
constexpr int64_t unpacked_codes_bytes(const RowGroupGeometry& L, int64_t n_groups) {
    return n_groups * L.blocks * kI8Steps * 64;
}

// What one column pass over a tile prefetches. end: the end of the call's groups (null: this
// pass fetches nothing). Cursor: the pass moves the cursor through its share of the tile's bytes,
// span bytes from base (past the tile's start, plus kPrefetchAheadBytes), step bytes a block and
// the rest of the span at its last block.
struct PassFetch {
    const uint8_t* end = nullptr;
    int64_t base = 0, span = 0, step = 0;
};

// Groups g .. g+RG-1 (at `group`) times columns j0 .. j0+C-1. store[i]: the lanes of group i
// that are rows of this call. share: what this pass prefetches.
// kUnpacked: the tile's codes (unpack_nibble_codes_tile, unpack_q6_k_tile) and Q4_KR / Q5_KR
// scales after them (unpack_affine_k_scales_tile) come unpacked from `unpacked`.
template <WType T, int RG, int C, bool Gfni, Fetch F, bool kUnpacked = false>
void tile(const RowGroupGeometry& L, const uint8_t* group, const QuantizedColumns& x, int64_t j0,
          const __mmask16 (&store)[RG], float* y, int64_t ldy, const PassFetch& share,
          const uint8_t* unpacked = nullptr) {
    constexpr int64_t kCodeBytes = row_group_block_code_bytes(T);
    const __m512i low_mask = _mm512_set1_epi8(15);
    const __m512i shift_matrix = _mm512_set1_epi64(kHighNibblesToLow);
    __m512 acc[RG][C];
#pragma GCC unroll 8
    for (int g = 0; g < RG; ++g)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) acc[g][c] = _mm512_setzero_ps();
    const int8_t* xc[C];     // [chunks, 8 steps, 16 lanes, 4] per column
    const float* xsumf[C];   // [blocks] the code sums as floats (Q4_KR, Q5_KR: their mins' term)
    const float* xd[C];      // [blocks]
    // [blocks] where the sums start: -offset * xsum (Q4_0R, Q8_0R), or Q6_KR's first sub-block's
    // start and its second's (xstart_second).
    const int32_t* xstart[C];
    const int32_t* xstart_second[C];
    const int32_t* xpairs[C];  // [blocks] Q2_KR: the two half sums as int16s (half_pairs)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        xc[c] = x.codes_of(j0 + c);
        xsumf[c] = x.float_sums_of(j0 + c);
        xd[c] = x.scales_of(j0 + c);
        if constexpr (T == WType::Q2_KR) {
            xpairs[c] = x.half_pairs_of(j0 + c);
        } else if constexpr (row_group_sub_block_scales(T)) {
            xstart[c] = x.q6_starts_of(j0 + c, false);
            xstart_second[c] = x.q6_starts_of(j0 + c, true);
        } else if constexpr (row_group_code_offset(T) != 0) {
            xstart[c] = x.offset_starts_of<row_group_code_offset(T)>(j0 + c);
        }
    }
    // Group streams, four-group tiles of the 4-bit types (measured on Q4_0R when its scales still
    // followed all its codes, the layout the K-quants kept until session 55): the far distance
    // rounded up to whole groups, so each group's far stream covers a later group from its first
    // line, as the group reads its own. Otherwise the far streams leave a
    // gap of one group's scale bytes (1 KB at 1024 columns, a ninth of a 4-bit group) at the start
    // of every group's codes, read with no prefetch when a tile begins. Session 32, kernel_ab on
    // the Xeon: Q4_0R width 1 0.990, 0.994, 0.991, 0.978, width 2 0.994, 2B width 1 0.996 (width 1,
    // the rounding alone 1.006, the scale lines alone 0.993). Q8_0R, whose gap is a seventeenth of
    // a group, width 1 0.991, 0.990, 1.005, 1.008, 0.999: left as it was. In three-group tiles it
    // took longer (Q4_0R width 4 1.015; the rounding alone 1.024, the scale lines alone 1.008).
    constexpr bool kWholeGroupsAhead = kFourBit<T> && RG == 4;
    const int64_t far_bytes = kWholeGroupsAhead ? ceil_to(kGroupStreamFarBytes<RG>, int64_t(L.group_bytes))
                                                : kGroupStreamFarBytes<RG>;
    const char* const fetch_base = reinterpret_cast<const char*>(group) + kPrefetchAheadBytes + share.base;
    const char* fetch = fetch_base;  // next line to fetch
    const char* stop = reinterpret_cast<const char*>(share.end);
    for (int64_t b = 0; b < L.blocks; ++b) {
        if (F == Fetch::GroupStreams && stop) {
            // Each group: the lines of the stretch of its one stream that block b reads, as many
            // bytes on as kAheadBlocks blocks' codes into L1 and far_bytes on into L2: the
            // block's code lines, and (at a stretch's end) the scale lines that follow them.
            constexpr int64_t kAheadBlocks = kGroupStreamAheadBytesFor<T, C> / kCodeBytes;
#pragma GCC unroll 4
            for (int g = 0; g < RG; ++g) {
                const char* codes = reinterpret_cast<const char*>(group) + g * L.group_bytes;
                const int64_t from = row_group_codes_at(T, b);
                const char* ahead = codes + from + kAheadBlocks * kCodeBytes;
                const char* far = codes + from + far_bytes;
#pragma GCC unroll 8
                for (int64_t line = 0; line < kCodeBytes; line += 64) {
                    if (ahead + line < stop) _mm_prefetch(ahead + line, _MM_HINT_T0);
                    if (far + line < stop) _mm_prefetch(far + line, _MM_HINT_T1);
                }
                if constexpr (row_group_paired(T)) {
                    // After the pair's second block, the pair's scale line (the stretch of the
                    // group's one stream that block ends). A fixed count of code lines and then
                    // this line: with a loop to the stretch's end, 4 or 5 lines, Q4_0R width 5
                    // took 1.12x session 50's time in tools/kernel_ab, this way 1.03-1.04x.
                    if (b % 2) {
                        // The pair's scale lines: one, or IQ4_XSR's two (f32 scales).
                        for (int64_t line = 0; line < row_group_span_scale_bytes(T); line += 64) {
                            if (ahead + kCodeBytes + line < stop)
                                _mm_prefetch(ahead + kCodeBytes + line, _MM_HINT_T0);
                            if (far + kCodeBytes + line < stop)
                                _mm_prefetch(far + kCodeBytes + line, _MM_HINT_T1);
                        }
                    }
                } else {
                    // The K-quants: a span's scale lines, which come before its codes: the first
                    // span's with block 0, the next span's with a span's last block (a fixed
                    // count of lines, as the pairs' one).
                    constexpr int64_t kSpan = row_group_span_blocks(T);
                    constexpr int64_t kSpanScaleBytes = row_group_span_scale_bytes(T);
                    if (b == 0 || b % kSpan == kSpan - 1) {
                        // The span's start, from `from`: block 0's own span, or the next one.
                        const int64_t back = b == 0 ? -kSpanScaleBytes : kCodeBytes;
#pragma GCC unroll 16
                        for (int64_t line = 0; line < kSpanScaleBytes; line += 64) {
                            if (ahead + back + line < stop)
                                _mm_prefetch(ahead + back + line, _MM_HINT_T0);
                            if (far + back + line < stop)
                                _mm_prefetch(far + back + line, _MM_HINT_T1);
                        }
                    }
                }
            }
        } else if (stop) {
            const char* until = fetch_base + (b + 1 == L.blocks ? share.span : (b + 1) * share.step);
            for (; fetch < until && fetch < stop; fetch += 64) _mm_prefetch(fetch, _MM_HINT_T0);
        }
        if constexpr (row_group_sub_block_sums(T)) {
            q6_k_block<T, Gfni, RG, C, kUnpacked>(L, group, b, xc, xstart, xstart_second, xpairs,
                                                  xd, unpacked, acc);
        } else {
            // The sums start at the codes' offset correction, -offset * (the block's activation code
            // sum). A block's 8 dot products per (group, column) form kChains independent chains
            // (added at the end: exact in int32, so the same bits), which a one-group tile needs to
            // keep the dot-product unit busy: one chain of 8 is 8 latencies long per block.
            __m512i isum[kChains<RG>][RG][C];
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c) {
                // -offset * xsum, made when the activations were quantized, as a broadcast load (a
                // load port's work; a shift and a subtraction here took the dot products' ports).
                // Session 40, Xeon: BM_RowGroupsPrefill width 16 / 128, Q8_0R 0.91x / 0.91x the
                // time, Q4_0R 0.87x / 0.93x; kernel_ab prefill 128 Q8 0.939, 0.956, Q4 0.959,
                // 1.007; widths 1 and 4 from memory the same (0.989-1.004).
                // (Q4_KR, Q5_KR: no offset; their mins' term follows the block.)
                __m512i start = _mm512_setzero_si512();
                if constexpr (row_group_code_offset(T) != 0)
                    start = _mm512_set1_epi32(xstart[c][b]);
#pragma GCC unroll 4
                for (int g = 0; g < RG; ++g) {
                    isum[0][g][c] = start;
                    if constexpr (kChains<RG> == 2) isum[1][g][c] = _mm512_setzero_si512();
                }
            }
            const int64_t xoff = (b / kI8ChunkBlocks) * kI8ChunkValues + 4 * (b % kI8ChunkBlocks);
            auto step = [&](int c, int s) {  // activation step s (elements 4s..4s+3) of column c, broadcast
                int32_t v;
                std::memcpy(&v, xc[c] + xoff + s * 64, 4);
                return _mm512_set1_epi32(v);
            };
            // Every group's code vector of a step is loaded (and unpacked) first, then each column's
            // activation step is broadcast once and meets all of them: no broadcast stays live across
            // the groups, which at more than kMaxTileCols columns would not fit in the registers
            // with the sums (hoisting them instead measured the same up to 4 columns).
            if constexpr (T == WType::Q8_0R) {
#pragma GCC unroll 8
                for (int i = 0; i < 8; ++i) {
                    __m512i v[RG];
#pragma GCC unroll 4
                    for (int g = 0; g < RG; ++g)
                        v[g] = _mm512_load_si512(group + g * L.group_bytes +
                                                 row_group_codes_at(T, b) + i * 64);
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c) {
                        const __m512i xs = step(c, i);
#pragma GCC unroll 4
                        for (int g = 0; g < RG; ++g) {
                            __m512i& sum = isum[i % kChains<RG>][g][c];
                            sum = _mm512_dpbusd_epi32(sum, v[g], xs);
                        }
                    }
                }
            } else {
#pragma GCC unroll 4
                for (int i = 0; i < 4; ++i) {  // low nibbles: step i; high nibbles: step 4 + i
                    __m512i vlo[RG], vhi[RG];
#pragma GCC unroll 4
                    for (int g = 0; g < RG; ++g) {
                        if constexpr (kUnpacked) {  // [groups, blocks, kI8Steps, 64]
                            const uint8_t* made =
                                unpacked + ((g * L.blocks + b) * kI8Steps + i) * 64;
                            vlo[g] = _mm512_load_si512(made);
                            vhi[g] = _mm512_load_si512(made + 4 * 64);
                        } else {
                            nibble_steps<T, Gfni>(
                                group + g * L.group_bytes + row_group_codes_at(T, b), i, low_mask,
                                shift_matrix, vlo[g], vhi[g]);
                        }
                    }
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c) {
                        const __m512i lo = step(c, i), hi = step(c, 4 + i);
#pragma GCC unroll 4
                        for (int g = 0; g < RG; ++g) {
                            isum[0][g][c] = _mm512_dpbusd_epi32(isum[0][g][c], vlo[g], lo);
                            __m512i& high_sum = isum[kChains<RG> - 1][g][c];
                            high_sum = _mm512_dpbusd_epi32(high_sum, vhi[g], hi);
                        }
                    }
                }
            }
#pragma GCC unroll 4
            for (int g = 0; g < RG; ++g) {
                if constexpr (row_group_affine_k(T)) {
                    __m512 dw, dm;
                    if constexpr (kUnpacked) {  // [groups, blocks, dw | dm, 16] floats
                        const float* made =
                            reinterpret_cast<const float*>(unpacked + unpacked_codes_bytes(L, RG)) +
                            (g * L.blocks + b) * 32;
                        dw = _mm512_load_ps(made);
                        dm = _mm512_load_ps(made + 16);
                    } else {
                        const AffineScales a = affine_k_scales<T>(group + g * L.group_bytes, b);
                        dw = a.dw, dm = a.dm;
                    }
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c) {
                        const __m512 dx = _mm512_set1_ps(xd[c][b]);
                        acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(block_sum(isum, g, c)), _mm512_mul_ps(dw, dx), acc[g][c]);
                        // The sum as a float made at quantization: a broadcast load, where a
                        // scalar convert and a broadcast from its register took the dot
                        // products' ports (session 40, Xeon, BM_KQuantRowGroupsPrefill width 16
                        // / 128: Q4_KR 0.92x / 0.97x the time, Q5_KR 0.95x / 0.93x).
                        acc[g][c] = _mm512_fmadd_ps(_mm512_set1_ps(xsumf[c][b]), _mm512_mul_ps(dm, dx), acc[g][c]);
                    }
                } else {
                    const uint8_t* d = group + g * L.group_bytes + row_group_d_at(T, b);
                    __m512 dw;  // the 16 rows' scales: f16, or IQ4_XSR's f32
                    if constexpr (row_group_f32_scales(T))
                        dw = _mm512_load_ps(reinterpret_cast<const float*>(d));
                    else
                        dw =
                            _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d)));
#pragma GCC unroll 8
                    for (int c = 0; c < C; ++c)
                        acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(block_sum(isum, g, c)),
                                                    _mm512_mul_ps(dw, _mm512_set1_ps(xd[c][b])), acc[g][c]);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < RG; ++g)
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) _mm512_mask_storeu_ps(y + c * ldy + g * 16, store[g], acc[g][c]);
}

// Above this many columns (a prefill: passes of kMaxTileCols over each tile) a Q6_KR tile's codes
// are unpacked once into a scratch buffer that every pass reads, instead of by every pass: the
// unpacking (about 26 operations a group and block, against 8 dot products a column) ran on the
// ports the dot products need. The same codes, so the same sums and bits. Likewise the scales of
// Q4_KR and Q5_KR tiles (about 11 operations a group and block): session 40, Xeon,
// BM_KQuantRowGroupsPrefill width 128, Q4_KR 0.73-0.81x the time, Q5_KR 0.84-0.89x; kernel_ab
// q4_k_m prefill 128 0.918 (width 4, which does not unpack, 0.996). And the 4- and 5-bit codes
// (unpack_nibble_codes_tile: 2 operations a code line with GFNI, 8 for Q5_KR's fifth bits, against
// 8 dot products a group): session 41, same Xeon, BM_RowGroupsPrefill / BM_KQuantRowGroupsPrefill
// width 128, Q4_0R 0.94x, Q4_KR 0.92-0.94x, Q5_KR 0.75-0.76x; kernel_ab prefill 128 q4 0.961,
// q4_k_m 0.977.
constexpr int64_t kUnpackOnceAbove = kCursorSpreadUpTo;

// The scales of Q4_KR / Q5_KR groups at `group` .. n_groups on, as the tile reads them unpacked:
// [n_groups, blocks, dw | dm, 16] floats (affine_k_scales).
template <WType T>
void unpack_affine_k_scales_tile(const RowGroupGeometry& L, const uint8_t* group, int64_t n_groups,
                                 uint8_t* out) {
    float* to = reinterpret_cast<float*>(out);
    for (int64_t g = 0; g < n_groups; ++g)
        for (int64_t b = 0; b < L.blocks; ++b) {
            const AffineScales a = affine_k_scales<T>(group + g * L.group_bytes, b);
            _mm512_store_ps(to + (g * L.blocks + b) * 32, a.dw);
            _mm512_store_ps(to + (g * L.blocks + b) * 32 + 16, a.dm);
        }
}

// The codes of Q4_0R, Q4_KR or Q5_KR groups at `group` .. n_groups on, unpacked: [n_groups,
// blocks, kI8Steps, 64] bytes, step s's codes (the low nibbles for s < 4, the high ones, and
// Q5_KR's fifth bits, after) as tile reads them.
template <WType T, bool Gfni>
void unpack_nibble_codes_tile(const RowGroupGeometry& L, const uint8_t* group, int64_t n_groups,
                              uint8_t* out) {
    const __m512i low_mask = _mm512_set1_epi8(15);
    const __m512i shift_matrix = _mm512_set1_epi64(kHighNibblesToLow);
    for (int64_t g = 0; g < n_groups; ++g)
        for (int64_t b = 0; b < L.blocks; ++b) {
            const uint8_t* codes = group + g * L.group_bytes + row_group_codes_at(T, b);
            uint8_t* to = out + (g * L.blocks + b) * kI8Steps * 64;
#pragma GCC unroll 4
            for (int i = 0; i < 4; ++i) {
                __m512i lo, hi;
                nibble_steps<T, Gfni>(codes, i, low_mask, shift_matrix, lo, hi);
                _mm512_store_si512(to + i * 64, lo);
                _mm512_store_si512(to + (4 + i) * 64, hi);
            }
        }
}

// The codes of Q6_KR (Q3_KR, Q2_KR) groups at `group` .. n_groups on, unpacked: [n_groups, blocks,
// kI8Steps, 64] bytes, each step's 64 bytes as q6_k_block reads them.
template <WType T, bool Gfni>
void unpack_q6_k_tile(const RowGroupGeometry& L, const uint8_t* group, int64_t n_groups,
                      uint8_t* out) {
    for (int64_t g = 0; g < n_groups; ++g)
        for (int64_t b = 0; b < L.blocks; ++b) {
            const uint8_t* codes = group + g * L.group_bytes + row_group_codes_at(T, b);
            uint8_t* to = out + (g * L.blocks + b) * kI8Steps * 64;
#pragma GCC unroll 8
            for (int s = 0; s < kI8Steps; ++s)
                _mm512_store_si512(to + s * 64, q6_k_step<T, Gfni>(codes, s));
        }
}

template <WType T, int RG, bool Gfni, Fetch F, bool kUnpacked = false>
void tile_cols(int c, const RowGroupGeometry& L, const uint8_t* group, const QuantizedColumns& x,
               int64_t j0, const __mmask16 (&store)[RG], float* y, int64_t ldy,
               const PassFetch& share, const uint8_t* unpacked = nullptr) {
    if constexpr (F == Fetch::Cursor && !kUnpacked && kLoneColumnJoins<T>) {
        if (c == kMaxTileCols + 1)
            return tile<T, RG, kMaxTileCols + 1, Gfni, F>(L, group, x, j0, store, y, ldy, share);
    }
    if constexpr (F ==
                  Fetch::GroupStreams) {  // wide tiles (kWideTileCols); the cursor's widest is 5
        switch (c) {
            case 8: return tile<T, RG, 8, Gfni, F>(L, group, x, j0, store, y, ldy, share);
            case 7: return tile<T, RG, 7, Gfni, F>(L, group, x, j0, store, y, ldy, share);
            case 6: return tile<T, RG, 6, Gfni, F>(L, group, x, j0, store, y, ldy, share);
            case 5: return tile<T, RG, 5, Gfni, F>(L, group, x, j0, store, y, ldy, share);
            default: break;
        }
    }
    switch (c) {
        case 4:
            return tile<T, RG, 4, Gfni, F, kUnpacked>(L, group, x, j0, store, y, ldy, share,
                                                      unpacked);
        case 3:
            return tile<T, RG, 3, Gfni, F, kUnpacked>(L, group, x, j0, store, y, ldy, share,
                                                      unpacked);
        case 2:
            return tile<T, RG, 2, Gfni, F, kUnpacked>(L, group, x, j0, store, y, ldy, share,
                                                      unpacked);
        default:
            return tile<T, RG, 1, Gfni, F, kUnpacked>(L, group, x, j0, store, y, ldy, share,
                                                      unpacked);
    }
}

// The call's tiles, groups g0 .. g1-1: tile_groups (1 to 4) groups a tile while that many are
// left (one fewer where one more is left), then what is left as one tile; columns kWideTileCols
// (group streams) or kMaxTileCols (the cursor; kLoneColumnJoins) at a time.
template <WType T, bool Gfni, Fetch F>
void tiles(const RowGroupGeometry& L, const uint8_t* data, int64_t g0, int64_t g1, int64_t tile_groups,
           const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0, int64_t r1) {
    auto at = [&](int64_t g) { return data + size_t(g) * L.group_bytes; };
    // A prefill's tiles of 4-, 5- and 6-bit codes unpack them once for all their passes
    // (unpack_nibble_codes_tile, unpack_q6_k_tile), Q4_KR and Q5_KR tiles their scales too
    // (unpack_affine_k_scales_tile).
    constexpr bool kUnpackable = T != WType::Q8_0R && F == Fetch::Cursor;
    const bool unpack_once = kUnpackable && x.n > kUnpackOnceAbove;
    // [tile groups, blocks, kI8Steps, 64] codes, then (Q4_KR, Q5_KR) [tile groups, blocks, 32]
    // scales
    constexpr int64_t kUnpackedBytesPerBlock = kI8Steps * 64 + (row_group_affine_k(T) ? 2 * 64 : 0);
    uint8_t* unpacked = nullptr;
    if (unpack_once) unpacked = x86::tile_scratch(tile_groups * L.blocks * kUnpackedBytesPerBlock);
    constexpr int64_t cols_per_pass = F == Fetch::GroupStreams ? kWideTileCols : kMaxTileCols;
    const bool lone_column_joins = F == Fetch::Cursor && kLoneColumnJoins<T> &&
                                   x.n <= kCursorSpreadUpTo && x.n % cols_per_pass == 1 && x.n > 1;
    const int64_t passes = (x.n + cols_per_pass - 1) / cols_per_pass - (lone_column_joins ? 1 : 0);
    const int64_t fetching_passes = x.n <= kCursorSpreadUpTo ? passes : 1;
    for (int64_t g = g0; g < g1;) {
        const int64_t left = g1 - g;
        // One group more than a tile takes goes as a smaller tile and a pair, not a tile and a
        // single group (one stream; broadcasts serving one group): 3 + 1 -> 2 + 2, 4 + 1 -> 3 + 2;
        // and three left of four-group tiles go as one three-group tile, not 2 + 1. Session 30,
        // kernel_ab: Q4_0R width 4 0.993, 0.991, width 3 0.997, width 1 1.000; Q8_0R width 4 0.997
        // (three left as one tile: Q4_0R width 1 1.004, Q8_0R 1.002: the same, and simpler).
        const int64_t n_groups = tile_groups >= 3 && left == tile_groups + 1 ? tile_groups - 1
                                                                             : std::min(left, tile_groups);
        const int64_t tile_bytes = n_groups * int64_t(L.group_bytes);
        if (unpack_once) {
            if constexpr (row_group_sub_block_sums(T))
                unpack_q6_k_tile<T, Gfni>(L, at(g), n_groups, unpacked);
            else
                unpack_nibble_codes_tile<T, Gfni>(L, at(g), n_groups, unpacked);
            if constexpr (row_group_affine_k(T))
                unpack_affine_k_scales_tile<T>(L, at(g), n_groups,
                                               unpacked + unpacked_codes_bytes(L, n_groups));
        }
        for (int64_t j0 = 0, pass_cols = 0; j0 < x.n; j0 += pass_cols) {
            pass_cols = lone_column_joins && x.n - j0 == cols_per_pass + 1
                            ? cols_per_pass + 1
                            : std::min<int64_t>(cols_per_pass, x.n - j0);
            const int c = int(pass_cols);
            float* yt = y + j0 * ldy + g * 16;
            PassFetch share;
            if (F == Fetch::GroupStreams && j0 == 0) share.end = at(g1);
            if (F == Fetch::Cursor && j0 < fetching_passes * cols_per_pass) {
                const int64_t pass = j0 / cols_per_pass;
                const int64_t base = pass * tile_bytes / fetching_passes;
                const int64_t span = (pass + 1) * tile_bytes / fetching_passes - base;
                share = {at(g1), base, span, span / L.blocks};
            }
            auto run = [&]<int RG>() {
                __mmask16 store[RG];  // the lanes of each group that are rows of this call
#pragma GCC unroll 4
                for (int i = 0; i < RG; ++i) store[i] = row_group_lanes(g + i, r0, r1);
                if constexpr (kUnpackable) {
                    if (unpack_once)
                        return tile_cols<T, RG, Gfni, F, true>(c, L, at(g), x, j0, store, yt, ldy,
                                                               share, unpacked);
                }
                tile_cols<T, RG, Gfni, F>(c, L, at(g), x, j0, store, yt, ldy, share);
            };
            if constexpr (F == Fetch::HardwareStream) {  // one group a tile (gemm)
                run.template operator()<1>();
                continue;
            }
            switch (n_groups) {
                case 4: run.template operator()<4>(); break;
                case 3: run.template operator()<3>(); break;
                case 2: run.template operator()<2>(); break;
                default: run.template operator()<1>(); break;
            }
        }
        g += n_groups;
    }
}

template <WType T, bool Gfni>
void gemm(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0, int64_t r1,
          Fetch asked) {
    const RowGroupGeometry L = row_group_geometry(T, w.cols);
    const int64_t g0 = r0 / 16, g1 = row_groups(r1);
    auto at = [&](int64_t g) { return w.data + size_t(g) * L.group_bytes; };
    // On AMD the call's first kPrefetchAheadBytes at once (the tiles' cursor starts that far
    // ahead); on a Xeon that burst of 384 prefetches stalls the call while its fill buffers are
    // full (header).
    if (x86::tiles_tuned_as_amd()) {
        const char* first = reinterpret_cast<const char*>(at(g0));
        const char* first_end = first + std::min<size_t>(kPrefetchAheadBytes, size_t(g1 - g0) * L.group_bytes);
        for (const char* p = first; p < first_end; p += 64) _mm_prefetch(p, _MM_HINT_T0);
    }
    const Fetch fetch = fetch_for<T>(x.n, asked);
    if (fetch == Fetch::GroupStreams)
        return tiles<T, Gfni, Fetch::GroupStreams>(
            L, w.data, g0, g1, group_stream_tile_groups<T>(x.n, w.cols), x, y, ldy, r0, r1);
    if (fetch == Fetch::HardwareStream)
        return tiles<T, Gfni, Fetch::HardwareStream>(L, w.data, g0, g1, 1, x, y, ldy, r0, r1);
    const int64_t tile_groups = x.n > kPairedGroupsAbove<T> ? 2 : 1;
    tiles<T, Gfni, Fetch::Cursor>(L, w.data, g0, g1, tile_groups, x, y, ldy, r0, r1);
}

}  // namespace

void gemm_row_groups(const WeightMatrix& w, const QuantizedColumns& x, float* y, int64_t ldy, int64_t r0,
                     int64_t r1, bool gfni, RowGroupFetch fetch) {
    if (r0 >= r1 || x.n <= 0) return;
    visit_row_group_type(w.type, [&]<WType T>() {
        // Q8_0R has no codes to unpack, Q6_KR its own unpacking: no GFNI variant.
        if constexpr (T == WType::Q8_0R || T == WType::Q6_KR)
            gemm<T, false>(w, x, y, ldy, r0, r1, fetch);
        else
            gfni ? gemm<T, true>(w, x, y, ldy, r0, r1, fetch) : gemm<T, false>(w, x, y, ldy, r0, r1, fetch);
    });
}

}  // namespace nextn::avx512
