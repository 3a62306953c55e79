#include "core/zero_pages.h"

#include <sys/mman.h>

#include <cstring>
#include <utility>

#include "core/error.h"
#include "core/huge_pages.h"

namespace nextn {

ZeroPagesBuffer::ZeroPagesBuffer(size_t count) : size_(count) {
    if (count == 0) return;
    const size_t bytes = count * sizeof(float);
    // Whole huge pages when the buffer spans one, so the kernel can back it with them.
    const size_t page = bytes >= kHugePageBytes ? kHugePageBytes : size_t(4096);
    mapped_ = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        mapped_ = size_ = 0;
        fail("out of memory: could not map ", bytes, " bytes for a cache buffer");
    }
    if (page == kHugePageBytes) madvise(p, mapped_, MADV_HUGEPAGE);  // a hint: failure is harmless
    data_ = static_cast<float*>(p);
}

ZeroPagesBuffer::~ZeroPagesBuffer() { release(); }

void ZeroPagesBuffer::release() {
    if (data_) munmap(data_, mapped_);
    data_ = nullptr;
    size_ = mapped_ = 0;
}

ZeroPagesBuffer::ZeroPagesBuffer(const ZeroPagesBuffer& other) : ZeroPagesBuffer(other.size_) {
    if (size_) std::memcpy(data_, other.data_, size_ * sizeof(float));
}

ZeroPagesBuffer& ZeroPagesBuffer::operator=(const ZeroPagesBuffer& other) {
    if (this != &other) {
        ZeroPagesBuffer copy(other);
        *this = std::move(copy);
    }
    return *this;
}

ZeroPagesBuffer::ZeroPagesBuffer(ZeroPagesBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

ZeroPagesBuffer& ZeroPagesBuffer::operator=(ZeroPagesBuffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
        mapped_ = std::exchange(other.mapped_, 0);
    }
    return *this;
}

}  // namespace nextn
