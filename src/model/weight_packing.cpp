// pack_small_matrices (model/weights.h): the converted matrices under 2 MiB moved into one
// buffer on transparent huge pages.
#include <cstring>
#include <unordered_map>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "model/weights.h"

namespace nextn {

namespace {

constexpr size_t kAlign = 64;  // every matrix starts on a cache line, as allocated alone

bool packable(const WeightMatrix& m) { return m.owner && m.nbytes() < kHugePageBytes; }

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Hands freed heap pages back to the system. Matrices under glibc's (adaptive) mmap threshold
// live on the heap, whose free space in the middle is otherwise kept: without this, packing a
// MoE's experts would hold both copies at once.
void release_free_heap_pages() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

}  // namespace

void pack_small_matrices(ModelWeights& w) {
    // Distinct buffers only: a matrix that starts where another one does (a tied embedding) is
    // the same bytes and follows it.
    struct Slot {
        size_t offset;
        bool copied;
    };
    std::unordered_map<const uint8_t*, Slot> slots;  // by the matrix's current data
    size_t total = 0;
    for_each_matrix(w, [&](WeightMatrix& m) {
        if (!packable(m) || slots.count(m.data)) return;
        slots.emplace(m.data, Slot{total, false});
        total += aligned(m.nbytes());
    });
    if (slots.size() < 2) return;  // nothing to gather
    // Not zeroed: pages are touched as the matrices are copied in and their old buffers freed,
    // so the process never holds both copies of everything.
    std::shared_ptr<void> buffer = allocate_weight_memory(total, "buffer of small weight matrices",
                                                          /*zeroed=*/false);
    uint8_t* base = static_cast<uint8_t*>(buffer.get());
    constexpr size_t kTrimEvery = size_t(256) << 20;  // bytes copied between trims
    size_t since_trim = 0;
    for_each_matrix(w, [&](WeightMatrix& m) {
        if (!packable(m)) return;
        const auto it = slots.find(m.data);
        if (it == slots.end()) return;
        uint8_t* dst = base + it->second.offset;
        if (!it->second.copied) {
            std::memcpy(dst, m.data, m.nbytes());
            std::memset(dst + m.nbytes(), 0, aligned(m.nbytes()) - m.nbytes());
            it->second.copied = true;
            since_trim += m.nbytes();
        }
        m.data = dst;
        m.owner = std::shared_ptr<void>(buffer, dst);  // frees the old buffer when last held
        if (since_trim >= kTrimEvery) {
            release_free_heap_pages();
            since_trim = 0;
        }
    });
    release_free_heap_pages();
}

}  // namespace nextn
