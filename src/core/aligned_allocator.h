#pragma once
// A std::allocator replacement with 64-byte (cache line, one AVX-512 vector) alignment, for
// buffers that kernels write with aligned streaming stores (Gated-DeltaNet state slots).
#include <cstddef>
#include <cstdlib>
#include <new>

namespace nextn {

template <class T>
struct CacheAlignedAllocator {
    using value_type = T;
    static constexpr size_t kAlign = 64;

    CacheAlignedAllocator() = default;
    template <class U>
    CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}

    T* allocate(size_t n) {
        const size_t bytes = (n * sizeof(T) + kAlign - 1) / kAlign * kAlign;
        void* p = std::aligned_alloc(kAlign, bytes ? bytes : kAlign);
        if (!p) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t) { std::free(p); }

    template <class U>
    bool operator==(const CacheAlignedAllocator<U>&) const { return true; }
};

}  // namespace nextn
