#pragma once
// The transparent huge page size: buffers of at least this many bytes are mapped or aligned to
// it and marked MADV_HUGEPAGE (weights, packed small matrices, KV caches, GDN states).
#include <cstddef>

namespace nextn {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

}  // namespace nextn
