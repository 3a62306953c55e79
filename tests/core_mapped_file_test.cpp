// core/mapped_file.h: a whole file mapped read-only (an empty file maps to no data), and the
// path checks the loaders use: file_exists and is_directory tell regular files from folders,
// require_file names what it wanted and why it failed, read_text_file reads bytes as stored.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/mapped_file.h"
#include "error_of.h"
#include "test_paths.h"

namespace nextn {
namespace {

namespace fs = std::filesystem;

std::string scratch_file(const std::string& name, const std::string& bytes) {
    const std::string path = (fs::path(test::scratch_dir()) / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

std::string scratch_folder(const std::string& name) {
    const fs::path dir = fs::path(test::scratch_dir()) / name;
    fs::create_directories(dir);
    return dir.string();
}

// The map holds the file's bytes, its size and path; an empty file has size 0 and no data
// (mmap cannot map zero bytes, so it must not be asked to).
TEST(MappedFile, MapsTheBytesAndAnEmptyFileToNothing) {
    const std::string bytes("abc\0def\n", 8);
    const std::string path = scratch_file("eight.bin", bytes);
    const auto file = MappedFile::open(path);
    ASSERT_EQ(file->size(), 8u);
    ASSERT_NE(file->data(), nullptr);
    EXPECT_EQ(0, std::memcmp(file->data(), bytes.data(), 8));
    EXPECT_EQ(file->path(), path);

    const auto empty = MappedFile::open(scratch_file("empty.bin", ""));
    EXPECT_EQ(empty->size(), 0u);
    EXPECT_EQ(empty->data(), nullptr);
}

// Opening what is not there, or a folder, fails naming the path and the reason.
TEST(MappedFile, MissingFileAndFolderAreRefused) {
    const std::string missing = test::scratch_dir() + "/no-such-file.bin";
    EXPECT_EQ(test::error_of([&] { MappedFile::open(missing); }),
              "cannot open '" + missing + "': No such file or directory");
    const std::string dir = scratch_folder("a-folder");
    EXPECT_EQ(test::error_of([&] { MappedFile::open(dir); }),
              "'" + dir + "' is not a regular file");
}

// file_exists: a regular file only; is_directory: a folder only; neither for a missing path
// or a device.
TEST(MappedFile, FileAndFolderChecksTellThemApart) {
    const std::string file = scratch_file("plain.txt", "x");
    const std::string dir = scratch_folder("plain-folder");
    const std::string missing = test::scratch_dir() + "/missing";
    EXPECT_TRUE(file_exists(file));
    EXPECT_FALSE(file_exists(dir));
    EXPECT_FALSE(file_exists(missing));
    EXPECT_TRUE(is_directory(dir));
    EXPECT_FALSE(is_directory(file));
    EXPECT_FALSE(is_directory(missing));
    // A device is neither.
    EXPECT_FALSE(file_exists("/dev/null"));
    EXPECT_FALSE(is_directory("/dev/null"));
}

// require_file's two messages, as mapped_file.h states them: "does not exist", and for a device
// or other special file "is neither a file nor a directory"; a regular file passes.
TEST(MappedFile, RequireFileNamesWhatItWanted) {
    const std::string missing = test::scratch_dir() + "/missing.gguf";
    EXPECT_EQ(test::error_of([&] { require_file(missing, "model path"); }),
              "model path '" + missing + "' does not exist");
    EXPECT_EQ(test::error_of([] { require_file("/dev/null", "tokenizer path"); }),
              "tokenizer path '/dev/null' is neither a file nor a directory");
    EXPECT_EQ(test::error_of([&] { require_file(scratch_file("ok.bin", "1"), "model path"); }),
              "(no error)");
}

// read_text_file returns the bytes as stored (no newline translation, NULs kept), and fails
// naming a path it cannot open.
TEST(MappedFile, ReadTextFileKeepsTheBytes) {
    const std::string bytes("line\r\nnul\0end", 13);
    EXPECT_EQ(read_text_file(scratch_file("text.bin", bytes)), bytes);
    const std::string missing = test::scratch_dir() + "/missing.json";
    EXPECT_EQ(test::error_of([&] { read_text_file(missing); }), "cannot open '" + missing + "'");
}

}  // namespace
}  // namespace nextn
