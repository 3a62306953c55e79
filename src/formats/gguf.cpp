#include "formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "formats/ggml_types.h"

namespace nextn {

namespace {

constexpr int kMaxDims = 4;          // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 4;    // arrays of arrays of ...: deeper is not a real file
constexpr uint64_t kMaxKeyLength = 65535;
// Largest metadata array accepted. Real files' largest are tokenizer tables (~250k entries); an
// element in memory (int64, double, std::string) is up to 32x its smallest size on disk, so
// without a limit a corrupt count in a multi-GB file could claim gigabytes.
constexpr uint64_t kMaxArrayLength = uint64_t(1) << 24;
// Counts are only checked against the bytes left, which in a big file leaves room for a corrupt
// count far beyond what the metadata holds: reserve at most this many entries up front and let
// the vectors grow as entries are actually read.
constexpr uint64_t kMaxReserve = 4096;

size_t reserve_for(uint64_t count) { return size_t(std::min(count, kMaxReserve)); }

// Bounds-checked little-endian reader over the mapped header.
class Cursor {
public:
    Cursor(const std::string& path, const uint8_t* data, size_t size)
        : path_(path), data_(data), size_(size) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return size_ - pos_; }

    void need(uint64_t n, const std::string& what) const {
        if (n > remaining())
            fail(path_, ": truncated GGUF file: ", what, " needs ", n, " bytes at offset ", pos_,
                 " but only ", remaining(), " remain");
    }

    template <class T>
    T read(const std::string& what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string(const std::string& what, uint64_t max_len) {
        uint64_t len = read<uint64_t>(what + " length");
        if (len > max_len)
            fail(path_, ": ", what, " has implausible length ", len, " (limit ", max_len, ")");
        need(len, what);
        std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(len));
        pos_ += size_t(len);
        return s;
    }

    void skip(uint64_t n, const std::string& what) {
        need(n, what);
        pos_ += size_t(n);
    }

private:
    const std::string& path_;
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

size_t scalar_size(GgufType t) {
    switch (t) {
        case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
        case GgufType::U16: case GgufType::I16: return 2;
        case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
        case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
        case GgufType::STRING: return 8;   // at least the length field
        case GgufType::ARRAY: return 12;   // at least element type + count
    }
    return 0;
}

bool valid_type(uint32_t t) { return t <= uint32_t(GgufType::F64); }

// Reads one scalar into integer/number/string fields of `v` (v.type already set).
void read_scalar(Cursor& c, GgufType t, GgufValue& v, const std::string& what) {
    switch (t) {
        case GgufType::U8: v.integer = c.read<uint8_t>(what); break;
        case GgufType::I8: v.integer = c.read<int8_t>(what); break;
        case GgufType::U16: v.integer = c.read<uint16_t>(what); break;
        case GgufType::I16: v.integer = c.read<int16_t>(what); break;
        case GgufType::U32: v.integer = c.read<uint32_t>(what); break;
        case GgufType::I32: v.integer = c.read<int32_t>(what); break;
        case GgufType::I64: v.integer = c.read<int64_t>(what); break;
        case GgufType::U64:
            v.u64 = c.read<uint64_t>(what);
            v.integer = v.u64 > uint64_t(std::numeric_limits<int64_t>::max())
                            ? std::numeric_limits<int64_t>::max()
                            : int64_t(v.u64);
            break;
        case GgufType::BOOL: {
            uint8_t b = c.read<uint8_t>(what);
            v.integer = b != 0;
            break;
        }
        case GgufType::F32: v.number = c.read<float>(what); break;
        case GgufType::F64: v.number = c.read<double>(what); break;
        case GgufType::STRING: v.string = c.read_string(what, c.remaining()); break;
        case GgufType::ARRAY: break;  // handled by read_value
    }
}

void read_value(Cursor& c, const std::string& path, GgufType type, GgufValue& v,
                const std::string& key, int depth) {
    v.type = type;
    if (type != GgufType::ARRAY) {
        read_scalar(c, type, v, "value of '" + key + "'");
        return;
    }
    if (depth >= kMaxArrayDepth) fail(path, ": metadata '", key, "' nests arrays too deeply");
    uint32_t et = c.read<uint32_t>("array type of '" + key + "'");
    if (!valid_type(et)) fail(path, ": metadata '", key, "' has unknown array element type ", et);
    v.elem_type = GgufType(et);
    v.count = c.read<uint64_t>("array length of '" + key + "'");
    // Every element takes at least scalar_size bytes: reject counts the file cannot hold
    // before allocating anything.
    if (v.count > c.remaining() / scalar_size(v.elem_type))
        fail(path, ": metadata array '", key, "' claims ", v.count, " elements but only ",
             c.remaining(), " bytes remain");
    if (v.count > kMaxArrayLength)
        fail(path, ": metadata array '", key, "' claims an implausible ", v.count,
             " elements (limit ", kMaxArrayLength, ")");
    const std::string what = "element of '" + key + "'";
    switch (v.elem_type) {
        case GgufType::STRING:
            v.strings.reserve(reserve_for(v.count));
            for (uint64_t i = 0; i < v.count; ++i)
                v.strings.push_back(c.read_string(what, c.remaining()));
            break;
        case GgufType::F32:
        case GgufType::F64: {
            v.numbers.reserve(reserve_for(v.count));
            GgufValue e;
            for (uint64_t i = 0; i < v.count; ++i) {
                read_scalar(c, v.elem_type, e, what);
                v.numbers.push_back(e.number);
            }
            break;
        }
        case GgufType::ARRAY: {
            GgufValue e;
            for (uint64_t i = 0; i < v.count; ++i) read_value(c, path, GgufType::ARRAY, e, key, depth + 1);
            break;
        }
        default: {
            v.integers.reserve(reserve_for(v.count));
            GgufValue e;
            for (uint64_t i = 0; i < v.count; ++i) {
                read_scalar(c, v.elem_type, e, what);
                v.integers.push_back(e.integer);
            }
        }
    }
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

const char* gguf_type_name(GgufType t) {
    switch (t) {
        case GgufType::U8: return "u8";
        case GgufType::I8: return "i8";
        case GgufType::U16: return "u16";
        case GgufType::I16: return "i16";
        case GgufType::U32: return "u32";
        case GgufType::I32: return "i32";
        case GgufType::F32: return "f32";
        case GgufType::BOOL: return "bool";
        case GgufType::STRING: return "string";
        case GgufType::ARRAY: return "array";
        case GgufType::U64: return "u64";
        case GgufType::I64: return "i64";
        case GgufType::F64: return "f64";
    }
    return "?";
}

bool GgufValue::is_integer() const {
    return type != GgufType::F32 && type != GgufType::F64 && type != GgufType::STRING &&
           type != GgufType::ARRAY;
}

bool GgufValue::is_float() const { return type == GgufType::F32 || type == GgufType::F64; }

const GgufValue* GgufFile::find(const std::string& key) const {
    auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
    auto it = tensor_index.find(name);
    return it == tensor_index.end() ? nullptr : &tensors[it->second];
}

int64_t GgufFile::get_int(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) fail(path, ": missing GGUF metadata key '", key, "'");
    if (!v->is_integer())
        fail(path, ": GGUF metadata key '", key, "' is ", gguf_type_name(v->type),
             ", expected an integer");
    if (v->type == GgufType::U64 && v->u64 > uint64_t(std::numeric_limits<int64_t>::max()))
        fail(path, ": GGUF metadata key '", key, "' value ", v->u64, " is out of range");
    return v->integer;
}

int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
    return find(key) ? get_int(key) : fallback;
}

double GgufFile::get_float(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) fail(path, ": missing GGUF metadata key '", key, "'");
    if (v->is_float()) return v->number;
    if (v->is_integer()) return double(v->integer);
    fail(path, ": GGUF metadata key '", key, "' is ", gguf_type_name(v->type),
         ", expected a number");
}

double GgufFile::get_float(const std::string& key, double fallback) const {
    return find(key) ? get_float(key) : fallback;
}

std::string GgufFile::get_string(const std::string& key, const std::string& fallback) const {
    const GgufValue* v = find(key);
    if (!v) return fallback;
    if (v->type != GgufType::STRING)
        fail(path, ": GGUF metadata key '", key, "' is ", gguf_type_name(v->type),
             ", expected a string");
    return v->string;
}

bool GgufFile::get_bool(const std::string& key, bool fallback) const {
    const GgufValue* v = find(key);
    if (!v) return fallback;
    if (!v->is_integer())
        fail(path, ": GGUF metadata key '", key, "' is ", gguf_type_name(v->type),
             ", expected a bool");
    return v->integer != 0;
}

GgufFile read_gguf(const std::string& path) {
    std::shared_ptr<MappedFile> file = MappedFile::open(path);
    GgufFile g = parse_gguf(std::span<const uint8_t>(file->data(), file->size()), path);
    g.file = std::move(file);
    return g;
}

GgufFile parse_gguf(std::span<const uint8_t> bytes, const std::string& path) {
    GgufFile g;
    g.path = path;
    const uint8_t* base = bytes.data();
    const size_t size = bytes.size();
    Cursor c(path, base, size);

    if (size < 4 || std::memcmp(base, "GGUF", 4) != 0) fail(path, ": not a GGUF file (bad magic)");
    c.skip(4, "magic");
    g.version = c.read<uint32_t>("version");
    if (g.version != 2 && g.version != 3) {
        // A byte-swapped small version means a big-endian file.
        uint32_t swapped = __builtin_bswap32(g.version);
        if (swapped == 2 || swapped == 3)
            fail(path, ": big-endian GGUF files are not supported");
        fail(path, ": unsupported GGUF version ", g.version, " (supported: 2, 3)");
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor count");
    const uint64_t n_kv = c.read<uint64_t>("metadata count");
    // Smallest possible entries: key (8-byte length) + type + 1-byte value; tensor info with
    // name length, one dim, type and offset.
    if (n_kv > c.remaining() / 13)
        fail(path, ": GGUF metadata count ", n_kv, " is impossible for a file of ", size, " bytes");
    if (n_tensors > c.remaining() / 28)
        fail(path, ": GGUF tensor count ", n_tensors, " is impossible for a file of ", size,
             " bytes");

    for (uint64_t i = 0; i < n_kv; ++i) {
        std::string key = c.read_string("metadata key #" + std::to_string(i), kMaxKeyLength);
        uint32_t t = c.read<uint32_t>("type of '" + key + "'");
        if (!valid_type(t)) fail(path, ": GGUF metadata '", key, "' has unknown value type ", t);
        GgufValue v;
        read_value(c, path, GgufType(t), v, key, 0);
        if (!g.metadata.emplace(key, std::move(v)).second)
            fail(path, ": GGUF metadata key '", key, "' appears twice");
    }

    if (const GgufValue* a = g.find("general.alignment")) {
        if (!a->is_integer() || a->integer <= 0 || (a->integer & (a->integer - 1)) != 0 ||
            a->integer > (1 << 24))
            fail(path, ": general.alignment must be a positive power of two (got ",
                 a->is_integer() ? std::to_string(a->integer) : gguf_type_name(a->type), ")");
        g.alignment = uint64_t(a->integer);
    }

    g.tensors.reserve(reserve_for(n_tensors));
    for (uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensorInfo t;
        t.name = c.read_string("tensor name #" + std::to_string(i), kMaxKeyLength);
        uint32_t n_dims = c.read<uint32_t>("dimension count of '" + t.name + "'");
        if (n_dims < 1 || n_dims > kMaxDims)
            fail(path, ": tensor '", t.name, "' has ", n_dims, " dimensions (1..", kMaxDims,
                 " allowed)");
        uint64_t numel = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            uint64_t ne = c.read<uint64_t>("shape of '" + t.name + "'");
            if (ne == 0 || ne > (uint64_t(1) << 40))
                fail(path, ": tensor '", t.name, "' has invalid dimension ", ne);
            if (numel > (uint64_t(1) << 50) / ne)
                fail(path, ": tensor '", t.name, "' has an absurd element count");
            numel *= ne;
            t.ne.push_back(int64_t(ne));
        }
        t.ggml_type = c.read<uint32_t>("type of '" + t.name + "'");
        t.offset = c.read<uint64_t>("data offset of '" + t.name + "'");
        auto info = ggml_type_info(t.ggml_type);
        if (!info) fail(path, ": tensor '", t.name, "' has unknown GGUF tensor type id ", t.ggml_type);
        if (t.ne[0] % info->block_size != 0)
            fail(path, ": tensor '", t.name, "' of type ", info->name, " has rows of ", t.ne[0],
                 " elements, not a multiple of its block size ", info->block_size);
        t.nbytes = size_t(numel / uint64_t(info->block_size) * info->block_bytes);
        if (t.offset % g.alignment != 0)
            fail(path, ": tensor '", t.name, "' data offset ", t.offset,
                 " is not a multiple of the alignment ", g.alignment);
        if (!g.tensor_index.emplace(t.name, g.tensors.size()).second)
            fail(path, ": tensor '", t.name, "' appears twice");
        g.tensors.push_back(std::move(t));
    }

    const uint64_t data_start = align_up(c.pos(), g.alignment);
    const uint64_t data_size = data_start <= size ? size - data_start : 0;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (auto& t : g.tensors) {
        if (t.offset > data_size || t.nbytes > data_size - t.offset)
            fail(path, ": tensor '", t.name, "' data (", t.nbytes, " bytes at offset ", t.offset,
                 ") runs past the end of the file (data section holds ", data_size, " bytes)");
        t.data = base + data_start + t.offset;
        ranges.emplace_back(t.offset, t.offset + t.nbytes);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].first < ranges[i - 1].second)
            fail(path, ": GGUF tensors overlap at data offset ", ranges[i].first);
    return g;
}

}  // namespace nextn
