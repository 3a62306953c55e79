#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace nextn {

void Tokenizer::Impl::finish(const std::string& where) {
    int32_t size = bpe.size();
    for (const AddedToken& t : added) {
        if (t.id < 0) fail(where, ": added token \"", t.content, "\" has a negative id");
        size = std::max(size, t.id + 1);
    }
    token_text.assign(size, std::string());
    token_bytes.assign(size, std::string());
    flags.assign(size, 0);
    for (int32_t id = 0; id < bpe.size(); ++id) {
        const std::string& s = bpe.id_to_token(id);
        token_text[id] = s;
        // A token with characters outside the byte alphabet decodes to its own text (HF).
        if (!byte_level::decode(s, token_bytes[id])) token_bytes[id] = s;
    }
    for (const AddedToken& t : added) {
        token_text[t.id] = t.content;
        token_bytes[t.id] = t.content;
        flags[t.id] = kAdded | (t.special ? kSpecial : 0);
    }
    matcher = AddedTokenMatcher(added);
    if (eos_id >= 0 && std::find(eos_ids.begin(), eos_ids.end(), eos_id) == eos_ids.end())
        eos_ids.insert(eos_ids.begin(), eos_id);
}

int32_t Tokenizer::Impl::lookup(const std::string& text) const {
    for (const AddedToken& t : added)
        if (t.content == text) return t.id;
    return bpe.token_to_id(text);
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special, bool add_special) const {
    const Impl& m = *impl_;
    std::string sanitized;
    if (!utf8::is_valid(text)) {
        sanitized = utf8::lossy(text);
        text = sanitized;
    }
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    if (add_special && m.add_bos && m.bos_id >= 0) ids.push_back(m.bos_id);
    CachePool::Lease cache = m.caches.take();
    auto encode_segment = [&](std::string_view segment) {
        if (segment.empty()) return;
        std::string normalized;
        std::string_view body = segment;
        if (!m.normalizer.empty()) {
            normalized = m.normalizer.apply(segment);
            body = normalized;
        }
        m.pre_tokenizer.split(body, [&](const PrePiece& p) {
            m.bpe.encode_piece(body.substr(p.offset, p.length), p.prefix_space, ids, &*cache);
        });
    };
    std::size_t pos = 0;
    while (pos < text.size()) {
        AddedTokenMatcher::Match match = m.matcher.find(text, pos, parse_special);
        if (match.pos == std::string_view::npos) {
            encode_segment(text.substr(pos));
            break;
        }
        encode_segment(text.substr(pos, match.pos - pos));
        ids.push_back(match.id);
        pos = match.pos + match.length;
    }
    if (add_special && m.add_eos && m.eos_id >= 0) ids.push_back(m.eos_id);
    return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
    const Impl& m = *impl_;
    std::string out, bytes;
    for (int32_t id : ids) {
        if (id < 0 || id >= vocab_size()) continue;
        uint8_t f = m.flags[id];
        if (skip_special && (f & Impl::kSpecial)) continue;
        if (f & Impl::kAdded) {
            // An added token ends any character started before it (its text is not byte-level).
            utf8::append_lossy(out, bytes, true);
            bytes.clear();
            out += m.token_bytes[id];
        } else {
            bytes += m.token_bytes[id];
        }
    }
    utf8::append_lossy(out, bytes, true);
    return out;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->token_text.size()); }
int32_t Tokenizer::token_to_id(std::string_view token) const { return impl_->lookup(std::string(token)); }

const std::string& Tokenizer::id_to_token(int32_t id) const {
    static const std::string empty;
    return id < 0 || id >= vocab_size() ? empty : impl_->token_text[id];
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
    static const std::string empty;
    return id < 0 || id >= vocab_size() ? empty : impl_->token_bytes[id];
}

bool Tokenizer::is_special(int32_t id) const {
    return id >= 0 && id < vocab_size() && (impl_->flags[id] & Impl::kSpecial);
}
bool Tokenizer::is_added(int32_t id) const {
    return id >= 0 && id < vocab_size() && (impl_->flags[id] & Impl::kAdded);
}
int32_t Tokenizer::bos_id() const { return impl_->bos_id; }
int32_t Tokenizer::eos_id() const { return impl_->eos_id; }
int32_t Tokenizer::pad_id() const { return impl_->pad_id; }
const std::vector<int32_t>& Tokenizer::eos_ids() const { return impl_->eos_ids; }
bool Tokenizer::is_eos(int32_t id) const {
    return std::find(impl_->eos_ids.begin(), impl_->eos_ids.end(), id) != impl_->eos_ids.end();
}
const std::string& Tokenizer::bos_token() const { return impl_->bos_token; }
const std::string& Tokenizer::eos_token() const { return impl_->eos_token; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
const std::string& Tokenizer::chat_template() const { return impl_->chat_template; }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(&tokenizer), skip_special_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
    std::string out;
    if (id < 0 || id >= tokenizer_->vocab_size()) return out;
    if (skip_special_ && tokenizer_->is_special(id)) return out;
    if (tokenizer_->is_added(id)) {
        out = flush();
        out += tokenizer_->token_bytes(id);
        return out;
    }
    pending_ += tokenizer_->token_bytes(id);
    std::size_t used = utf8::append_lossy(out, pending_, false);
    pending_.erase(0, used);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out;
    utf8::append_lossy(out, pending_, true);
    pending_.clear();
    return out;
}

}  // namespace nextn
