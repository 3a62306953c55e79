// safetensors reader on files built here from the format's definition (an 8-byte little-endian
// header length, a JSON header of {dtype, shape, data_offsets} per tensor and an optional
// __metadata__ of strings, then the data): every size, offset and overlap is checked before a
// tensor is handed out, and a shard index may only name files in its own directory.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "error_of.h"
#include "formats/safetensors.h"
#include "test_paths.h"

namespace nextn {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// A file of `header` (JSON text) and `data_bytes` bytes of data, 0, 1, 2, ...
Bytes file_of(const std::string& header, size_t data_bytes) {
    Bytes b(8);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) b[size_t(i)] = uint8_t(n >> (8 * i));
    b.insert(b.end(), header.begin(), header.end());
    for (size_t i = 0; i < data_bytes; ++i) b.push_back(uint8_t(i));
    return b;
}

using test::error_of;

std::string parse_error(const Bytes& b) {
    return error_of([&] { parse_safetensors(b, "t.safetensors"); });
}

TEST(FormatsSafetensors, ReadsTensorsAndStringMetadata) {
    // Non-string metadata values are skipped: __metadata__ is a string-to-string map.
    const Bytes b = file_of(R"({"__metadata__": {"format": "pt", "n": 3},
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "U32", "shape": [1, 1], "data_offsets": [8, 12]},
        "c": {"dtype": "F16", "shape": [2], "data_offsets": [12, 16]},
        "d": {"dtype": "BF16", "shape": [2], "data_offsets": [16, 20]},
        "e": {"dtype": "I32", "shape": [1], "data_offsets": [20, 24]}})",
                            24);
    SafetensorsFile st = parse_safetensors(b, "t.safetensors");
    EXPECT_EQ(st.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
    ASSERT_EQ(st.tensors.size(), 5u);
    const RawTensor& a = st.tensors.at("a");
    EXPECT_EQ(a.dtype, DType::F32);
    EXPECT_EQ(a.nbytes, 8u);
    EXPECT_EQ(a.data[0], 0);
    const RawTensor& t = st.tensors.at("b");
    EXPECT_EQ(t.dtype, DType::U32);
    EXPECT_EQ(t.data[0], 8);  // the data section's byte 8
    EXPECT_EQ(st.tensors.at("c").dtype, DType::F16);
    EXPECT_EQ(st.tensors.at("d").dtype, DType::BF16);
    EXPECT_EQ(st.tensors.at("e").dtype, DType::I32);
}

// The header is a JSON object; an empty array, which holds no tensor entries to find fault with,
// is still not a safetensors header.
TEST(FormatsSafetensors, HeaderMustBeAnObject) {
    EXPECT_NE(parse_error(file_of("[]", 0)).find("not a JSON object"), std::string::npos);
}

// The header length is all 8 bytes: one in the top byte is 2^56, past any file.
TEST(FormatsSafetensors, HeaderLengthReadsAllEightBytes) {
    Bytes b = file_of(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4);
    EXPECT_NO_THROW(parse_safetensors(b, "t.safetensors"));  // the control
    b[7] = 1;
    EXPECT_NE(parse_error(b).find("runs past the end"), std::string::npos);
}

// A header over 100 MB is refused before it is parsed. The file is sparse (its length written,
// the rest a hole), so the test reads no 100 MB.
TEST(FormatsSafetensors, HeaderOver100MbIsRefused) {
    const std::string path = test::scratch_dir() + "/big.safetensors";
    const uint64_t header_len = 100u * 1024 * 1024 + 1;
    {
        std::ofstream f(path, std::ios::binary);
        Bytes len(8);
        for (int i = 0; i < 8; ++i) len[size_t(i)] = uint8_t(header_len >> (8 * i));
        f.write(reinterpret_cast<const char*>(len.data()), 8);
    }
    fs::resize_file(path, 8 + header_len);
    EXPECT_NE(error_of([&] { read_safetensors(path); }).find("implausibly large"),
              std::string::npos);
}

// Shapes: at most 8 dimensions, and a product that overflows is refused (it would otherwise wrap
// to a small size that matches the data, here 2^32 x 2^32 x 2 values wrapping to none).
TEST(FormatsSafetensors, ShapesThatCannotBeAreRefused) {
    EXPECT_NE(
        parse_error(
            file_of(
                R"({"a": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 4]}})",
                4))
            .find("bad shape"),
        std::string::npos);
    EXPECT_NO_THROW(parse_safetensors(
        file_of(R"({"a": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1], "data_offsets": [0, 4]}})",
                4),
        "t"));
    // Dimensions are unsigned integers: 1.5 is not one (it would read as 1).
    EXPECT_NE(parse_error(
                  file_of(R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4))
                  .find("bad shape"),
              std::string::npos);
    EXPECT_NE(
        parse_error(
            file_of(
                R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 2], "data_offsets": [0, 0]}})",
                0))
            .find("shape overflows"),
        std::string::npos);
}

// data_offsets are exactly [begin, end], and end - begin is exactly the shape's bytes: more bytes
// than the shape needs is as wrong as fewer.
TEST(FormatsSafetensors, OffsetsMustBeAPairSpanningExactlyTheShape) {
    EXPECT_NE(parse_error(
                  file_of(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4, 8]}})", 8))
                  .find("bad data_offsets"),
              std::string::npos);
    EXPECT_NE(parse_error(
                  file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}})", 12))
                  .find("holds 12 bytes"),
              std::string::npos);
    EXPECT_NE(
        parse_error(file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 4))
            .find("holds 4 bytes"),
        std::string::npos);
}

// Two tensors may not share bytes; an empty tensor holds none, so it overlaps nothing wherever
// its offsets point.
TEST(FormatsSafetensors, OverlapsAreRefusedButEmptyTensorsOverlapNothing) {
    EXPECT_NE(parse_error(file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                                  12))
                  .find("overlap"),
              std::string::npos);
    EXPECT_NO_THROW(
        parse_safetensors(file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                                  "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})",
                                  8),
                          "t"));
}

// A shard index may only name files in its own directory: "sub/x" and "../x" are refused.
TEST(FormatsSafetensors, IndexMayNotNameFilesOutsideItsDirectory) {
    const std::string dir = test::scratch_dir() + "/sharded";
    fs::create_directories(dir + "/sub");
    const Bytes shard =
        file_of(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4);
    for (const std::string& f : {dir + "/sub/model.safetensors", dir + "/model.safetensors"})
        std::ofstream(f, std::ios::binary)
            .write(reinterpret_cast<const char*>(shard.data()), std::streamsize(shard.size()));
    auto with_index = [&](const std::string& shard_name) {
        std::ofstream(dir + "/model.safetensors.index.json")
            << R"({"weight_map": {"a": ")" << shard_name << R"("}})";
        return error_of([&] { read_safetensors_dir(dir); });
    };
    EXPECT_EQ(with_index("model.safetensors"), "(no error)");  // the control
    EXPECT_NE(with_index("sub/model.safetensors").find("outside the directory"), std::string::npos);
    EXPECT_NE(with_index("../sharded/model.safetensors").find("outside the directory"),
              std::string::npos);
    // An index that names no shard says so (not that the directory has no model files).
    std::ofstream(dir + "/model.safetensors.index.json") << R"({"weight_map": {}})";
    EXPECT_NE(error_of([&] { read_safetensors_dir(dir); }).find("weight_map is empty"),
              std::string::npos);
}

// Without an index, a directory's weights are its model*.safetensors files (other .safetensors
// files, such as an MTP sidecar, are not shards), and a tensor may be in only one of them.
TEST(FormatsSafetensors, DirectoryShardsAreTheModelFilesWithUniqueTensors) {
    const std::string dir = test::scratch_dir() + "/unindexed";
    fs::create_directories(dir);
    auto write = [&](const std::string& name, const std::string& tensor) {
        const Bytes b = file_of(
            R"({")" + tensor + R"(": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4);
        std::ofstream(dir + "/" + name, std::ios::binary)
            .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    };
    write("model-00001.safetensors", "a");
    write("mtp.safetensors", "b");
    std::vector<SafetensorsFile> shards = read_safetensors_dir(dir);
    ASSERT_EQ(shards.size(), 1u);
    EXPECT_EQ(shards[0].tensors.count("a"), 1u);
    write("model-00002.safetensors", "a");
    EXPECT_NE(error_of([&] { read_safetensors_dir(dir); }).find("'a' appears in two shards"),
              std::string::npos);
}

}  // namespace
}  // namespace nextn
