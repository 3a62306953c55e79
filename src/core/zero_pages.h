#pragma once
// A float buffer on fresh anonymous pages: it reads as zeros without being written first, and a
// page takes memory only once written (on transparent huge pages where the kernel allows). For
// the KV caches, sized for the whole context but filled a position at a time: zero-filling them
// up front cost 0.4 s for a 4096-position Qwen3.5-0.8B sequence (2.5 s for 32768) on a VM
// where every first touch of a 4 KiB page is expensive, on each new sequence.
#include <cstddef>

namespace nextn {

class ZeroPagesBuffer {
public:
    ZeroPagesBuffer() = default;
    explicit ZeroPagesBuffer(size_t count);  // floats, all zero
    ~ZeroPagesBuffer();
    ZeroPagesBuffer(const ZeroPagesBuffer& other);  // copies the contents
    ZeroPagesBuffer& operator=(const ZeroPagesBuffer& other);
    ZeroPagesBuffer(ZeroPagesBuffer&& other) noexcept;
    ZeroPagesBuffer& operator=(ZeroPagesBuffer&& other) noexcept;

    float* data() { return data_; }
    const float* data() const { return data_; }
    size_t size() const { return size_; }

private:
    void release();

    float* data_ = nullptr;
    size_t size_ = 0;      // floats
    size_t mapped_ = 0;    // bytes mapped (size rounded up to whole pages)
};

}  // namespace nextn
