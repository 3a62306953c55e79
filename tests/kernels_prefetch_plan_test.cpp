// The int8 tiles' software prefetch of the next tile (x86/int8_dot_tiles.h): for every tile
// height and the row sizes of the chunked weight types, the bursts a tile issues, called as the
// tiles call it, cover the whole next tile once, in ascending whole lines, at most one burst a
// chunk, all by the tile's last chunk, and no burst is longer than the plan's limit (each
// vendor's: kPrefetchBurstLines, kPrefetchBurstLinesShort) when the tile has chunks enough to
// spread them. Nothing here changes a result (prefetches are hints),
// so a broken schedule would only show as lost speed: this is where it is caught.
#if NEXTN_X86_KERNELS
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/int8_dot.h"
#include "kernels/weight.h"
#include "kernels/x86/int8_dot_tiles.h"

namespace nextn {
namespace {

struct Burst {
    int64_t begin, end;  // byte offsets from the next tile's start
    int64_t chunk;       // the at_chunk call that issued it (-1: the constructor)
};

// Records bursts instead of prefetching them.
struct RecordBursts {
    const uint8_t* origin;
    const int64_t* chunk;
    std::vector<Burst>* out;
    void operator()(const uint8_t* line, const uint8_t* end, bool /*to_l1*/) const {
        out->push_back({line - origin, end - origin, *chunk});
    }
};

constexpr WType kChunkedTypes[] = {WType::Q8_0X, WType::Q4_0X, WType::Q4_1X, WType::Q4_1FX,
                                   WType::Q6_KX};

// Offsets are from the start of the tile fetched: the next (ahead 1) or the one after (2).
std::vector<Burst> schedule(int rows, int64_t row_bytes, int64_t chunks, int64_t j0, int ahead = 1,
                            int64_t max_burst_lines = x86::kPrefetchBurstLines) {
    const x86::TilePrefetchPlan plan(rows, size_t(row_bytes), chunks, max_burst_lines);
    std::vector<uint8_t> memory(size_t((ahead + 1) * rows * row_bytes));  // this tile and those after
    const uint8_t* wrow[1] = {memory.data()};
    std::vector<Burst> bursts;
    int64_t chunk = -1;
    const RecordBursts record{memory.data() + ahead * rows * row_bytes, &chunk, &bursts};
    x86::NextTilePrefetch<RecordBursts> prefetch(plan, wrow, j0, record, ahead);
    for (chunk = 0; chunk < chunks; ++chunk) prefetch.at_chunk(chunk);  // as the tiles do
    return bursts;
}

TEST(KernelsPrefetchPlan, BurstsCoverTheNextTileOnceByTheLastChunk) {
    int cases = 0;
    for (int64_t limit : {x86::kPrefetchBurstLines, x86::kPrefetchBurstLinesShort})
    for (int rows : {1, 2, 4, 8})
        for (WType type : kChunkedTypes)
            for (int64_t chunks = 1; chunks <= 24; ++chunks) {
                const int64_t row_bytes = int64_t(int8_dot_row_bytes(type, chunks * kI8ChunkValues));
                ASSERT_GT(row_bytes, 0);
                const int64_t tile_bytes = rows * row_bytes, lines = tile_bytes / 64;
                SCOPED_TRACE(testing::Message() << rows << " rows of " << wtype_name(type) << ", " << row_bytes << " bytes, "
                                                << chunks << " chunks, bursts of at most " << limit << " lines");
                const std::vector<Burst> bursts = schedule(rows, row_bytes, chunks, 0, 1, limit);
                ASSERT_FALSE(bursts.empty());
                EXPECT_EQ(bursts.front().begin, 0);
                EXPECT_EQ(bursts.front().chunk, -1) << "the first burst goes out before chunk 0";
                EXPECT_EQ(bursts.back().end, tile_bytes) << "the whole next tile";
                EXPECT_LE(int64_t(bursts.size()), chunks) << "at most one burst a chunk";
                for (size_t i = 0; i < bursts.size(); ++i) {
                    const Burst& b = bursts[i];
                    EXPECT_LT(b.begin, b.end);
                    EXPECT_EQ(b.begin % 64, 0);
                    EXPECT_EQ(b.end % 64, 0);
                    if (i > 0) {
                        EXPECT_EQ(b.begin, bursts[i - 1].end) << "ascending, no gap, no overlap";
                        EXPECT_GT(b.chunk, bursts[i - 1].chunk) << "one burst a chunk";
                    }
                    if ((lines + limit - 1) / limit <= chunks) {
                        EXPECT_LE((b.end - b.begin) / 64, limit);
                    }
                }
                ++cases;
            }
    EXPECT_EQ(cases, 2 * 4 * 5 * 24);
}

// A tile that fetches two ahead (4-bit, several columns) issues the same bursts, shifted by a
// tile: the tile after next, whole, and nothing of the next.
TEST(KernelsPrefetchPlan, TwoAheadFetchesTheTileAfterNext) {
    for (int64_t chunks : {1, 2, 7}) {
        const int64_t row_bytes = int64_t(int8_dot_row_bytes(WType::Q4_0X, chunks * kI8ChunkValues));
        const std::vector<Burst> one = schedule(4, row_bytes, chunks, 0, 1);
        const std::vector<Burst> two = schedule(4, row_bytes, chunks, 0, 2);
        ASSERT_EQ(one.size(), two.size()) << chunks << " chunks";
        for (size_t i = 0; i < one.size(); ++i) {
            EXPECT_EQ(one[i].begin, two[i].begin);
            EXPECT_EQ(one[i].end, two[i].end);
            EXPECT_EQ(one[i].chunk, two[i].chunk);
        }
        EXPECT_EQ(two.front().begin, 0);
        EXPECT_EQ(two.back().end, 4 * row_bytes);
    }
    EXPECT_TRUE(schedule(4, 576, 2, 3, 2).empty());
}

// A streaming plan's tiles prefetch line by line (StreamPrefetch), so its NextTilePrefetch
// issues no burst, for any height, row size and column group.
TEST(KernelsPrefetchPlan, StreamingPlansIssueNoBursts) {
    for (int rows : {1, 2, 4, 8})
        for (int64_t chunks : {1, 2, 7}) {
            const int64_t row_bytes = int64_t(int8_dot_row_bytes(WType::Q4_0X, chunks * kI8ChunkValues));
            const x86::TilePrefetchPlan plan(rows, size_t(row_bytes), chunks, x86::kPrefetchBurstLinesShort, true);
            EXPECT_TRUE(plan.stream);
            EXPECT_EQ(plan.row_bytes, size_t(row_bytes));
            std::vector<uint8_t> memory(size_t(3 * rows * row_bytes));
            const uint8_t* wrow[1] = {memory.data()};
            std::vector<Burst> bursts;
            int64_t chunk = -1;
            x86::NextTilePrefetch<RecordBursts> prefetch(plan, wrow, 0, {memory.data(), &chunk, &bursts});
            for (chunk = 0; chunk < chunks; ++chunk) prefetch.at_chunk(chunk);
            EXPECT_TRUE(bursts.empty()) << rows << " rows, " << chunks << " chunks";
        }
}

// Prefills (wider than a verify) never stream: they compute long enough per byte that the
// bursts served them better. Where a CPU streams at all, every verify width 1..8 does.
TEST(KernelsPrefetchPlan, OnlyVerifyWidthsStream) {
    for (int64_t n = x86::kStreamMaxColumns + 1; n <= 512; n *= 2) EXPECT_FALSE(x86::streams_on_this_cpu(n)) << n;
    for (int64_t n = 1; n <= x86::kStreamMaxColumns; ++n)
        EXPECT_EQ(x86::streams_on_this_cpu(n), x86::streams_on_this_cpu(1)) << n;
    EXPECT_EQ(x86::streams_on_this_cpu(1), !x86::tiles_tuned_as_amd());
}

TEST(KernelsPrefetchPlan, LaterColumnGroupsDoNotPrefetch) {
    EXPECT_TRUE(schedule(4, 1088, 2, 4).empty());
    EXPECT_TRUE(schedule(8, 2048, 7, 3).empty());
}

// The tile the 0.8B decode streams most (4 rows of 1024-value Q8_0X rows, 68 lines): one burst.
// 8 rows of 1024-value Q4_0X rows (72 lines, 2 chunks): two of 36.
TEST(KernelsPrefetchPlan, DecodeTilesOfTheSmallModel) {
    const int64_t q8_row = int64_t(int8_dot_row_bytes(WType::Q8_0X, 1024));
    const int64_t q4_row = int64_t(int8_dot_row_bytes(WType::Q4_0X, 1024));
    ASSERT_EQ(q8_row, 1088);
    ASSERT_EQ(q4_row, 576);
    const std::vector<Burst> q8 = schedule(4, q8_row, 2, 0);
    ASSERT_EQ(q8.size(), 1u);
    EXPECT_EQ(q8[0].end, 4 * q8_row);
    const std::vector<Burst> q4 = schedule(8, q4_row, 2, 0);
    ASSERT_EQ(q4.size(), 2u);
    EXPECT_EQ(q4[0].end - q4[0].begin, 36 * 64);
    EXPECT_EQ(q4[1].chunk, 1);
    // With the short limit (17 lines) the 2-row Q8_0X tile a Xeon decodes with (34 lines, 2
    // chunks) goes as two bursts of 17, one a chunk; the 4-row one as two of 34 (never more
    // bursts than chunks), and the Q4_0X tile keeps its two of 36.
    const std::vector<Burst> q8_two_rows = schedule(2, q8_row, 2, 0, 1, x86::kPrefetchBurstLinesShort);
    ASSERT_EQ(q8_two_rows.size(), 2u);
    EXPECT_EQ(q8_two_rows[0].end - q8_two_rows[0].begin, 17 * 64);
    EXPECT_EQ(q8_two_rows[1].chunk, 1);
    EXPECT_EQ(q8_two_rows[1].end, 2 * q8_row);
    const std::vector<Burst> q8_short = schedule(4, q8_row, 2, 0, 1, x86::kPrefetchBurstLinesShort);
    ASSERT_EQ(q8_short.size(), 2u);
    EXPECT_EQ(q8_short[0].end - q8_short[0].begin, 34 * 64);
    const std::vector<Burst> q4_short = schedule(8, q4_row, 2, 0, 1, x86::kPrefetchBurstLinesShort);
    ASSERT_EQ(q4_short.size(), 2u);
    EXPECT_EQ(q4_short[0].end - q4_short[0].begin, 36 * 64);
}

}  // namespace
}  // namespace nextn
#endif
