#pragma once
// A read-only memory map of a whole file. Weights are read in place from the page cache.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace nextn {

class MappedFile {
public:
    static std::shared_ptr<MappedFile> open(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    MappedFile() = default;
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

bool file_exists(const std::string& path);  // a regular file
// Fails unless `path` is a regular file, naming it as `what` ("model path", "tokenizer path"):
// "does not exist", or, for a device or other special file, "is neither a file nor a directory".
void require_file(const std::string& path, const std::string& what);
bool is_directory(const std::string& path);
std::string read_text_file(const std::string& path);

}  // namespace nextn
