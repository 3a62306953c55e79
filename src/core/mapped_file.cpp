#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace nextn {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) fail("cannot open '", path, "': ", std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("'", path, "' is not a regular file");
    }
    std::shared_ptr<MappedFile> file(new MappedFile());
    file->path_ = path;
    file->size_ = size_t(st.st_size);
    if (file->size_ > 0) {
        void* p = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            fail("cannot map '", path, "': ", std::strerror(errno));
        }
        file->data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    return file;
}

MappedFile::~MappedFile() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
}

bool file_exists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void require_file(const std::string& path, const std::string& what) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) fail(what, " '", path, "' does not exist");
    if (!S_ISREG(st.st_mode)) fail(what, " '", path, "' is neither a file nor a directory");
}

bool is_directory(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open '", path, "'");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace nextn
