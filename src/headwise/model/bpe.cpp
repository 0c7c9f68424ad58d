#include "headwise/model/bpe.hpp"

#include "headwise/base/tensor.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <limits>
#include <mutex>

namespace headwise::bpe {

namespace {

// ---------------------------------------------------------------------------------------------
// UTF-8

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD

// The UTF-8 sequence at the start of `s` (non-empty), by Unicode's table 3-7 of well-formed sequences.
// valid: `length` bytes encode `cp`. invalid: the first `length` bytes (at least 1) are a maximal
// ill-formed subpart, which one U+FFFD replaces. truncated: `s` ends inside a sequence well-formed so far.
struct Sequence {
    enum Status { valid, invalid, truncated } status;
    std::size_t length;
    char32_t cp;
};

Sequence utf8_sequence(std::string_view s) {
    const auto b0 = static_cast<unsigned char>(s[0]);
    if (b0 < 0x80) return {Sequence::valid, 1, b0};
    std::size_t length = 0;
    char32_t cp = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte; every later byte is 80..BF
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2, cp = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3, cp = b0 & 0x0Fu;
        if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
        if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4, cp = b0 & 0x07u;
        if (b0 == 0xF0) lo = 0x90;  // no overlong forms
        if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
    } else {
        return {Sequence::invalid, 1, 0};  // 80..C1, F5..FF never start a sequence
    }
    for (std::size_t k = 1; k < length; ++k) {
        if (k == s.size()) return {Sequence::truncated, k, 0};
        const auto b = static_cast<unsigned char>(s[k]);
        if (b < lo || b > hi) return {Sequence::invalid, k, 0};
        cp = (cp << 6) | (b & 0x3Fu);
        lo = 0x80, hi = 0xBF;
    }
    return {Sequence::valid, length, cp};
}

void append_utf8(std::string& out, char32_t c) {
    utf8proc_uint8_t buf[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

// ---------------------------------------------------------------------------------------------
// GPT-2's byte alphabet (bytes_to_unicode): the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand
// for themselves; the other 68 bytes, in order, for U+0100, U+0101, ... So the space 0x20 is U+0120
// "Ġ" and the newline 0x0A is U+010A "Ċ".

struct ByteAlphabet {
    std::array<char32_t, 256> char_of{};  // byte -> code point
    std::unordered_map<char32_t, unsigned char> byte_of;

    ByteAlphabet() {
        char32_t next = 0x100;
        for (unsigned b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            char_of[b] = printable ? static_cast<char32_t>(b) : next++;
            byte_of.emplace(char_of[b], static_cast<unsigned char>(b));
        }
    }
};

const ByteAlphabet& alphabet() {
    static const ByteAlphabet a;
    return a;
}

// The bytes a normal token stands for: each character of its piece mapped back to its byte. A piece
// with a character outside the alphabet (or not UTF-8) stands for its own bytes, as in Hugging Face's
// ByteLevel decoder.
std::string piece_bytes(std::string_view piece) {
    std::string out;
    for (std::size_t i = 0; i < piece.size();) {
        const Sequence s = utf8_sequence(piece.substr(i));
        if (s.status != Sequence::valid) return std::string(piece);
        const auto it = alphabet().byte_of.find(s.cp);
        if (it == alphabet().byte_of.end()) return std::string(piece);
        out.push_back(static_cast<char>(it->second));
        i += s.length;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The pre-tokenizer: Digits(individual_digits=true), then GPT-2's pattern on each stretch between
// the digits. A scanner over code points, each read where it is needed (no copy of the text).

enum class Kind : std::uint8_t {
    letter,   // \p{L}
    number,   // \p{N}
    space,    // \s: U+0009..U+000D, U+0085 and categories Zs, Zl, Zp
    other,    // [^\s\p{L}\p{N}]
    invalid,  // one byte that is not (the start of) valid UTF-8
    end,      // past the end of the text
};

struct Unit {
    char32_t cp;
    std::size_t length;  // bytes
    Kind kind;
};

Kind kind_of(char32_t c) {
    if (c < 0x80) {
        if ((c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z')) return Kind::letter;
        if (c >= U'0' && c <= U'9') return Kind::number;
        if (c == U' ' || (c >= 0x09 && c <= 0x0D)) return Kind::space;
        return Kind::other;
    }
    if (c == 0x85) return Kind::space;
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO:
            return Kind::letter;
        case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL:
        case UTF8PROC_CATEGORY_NO:
            return Kind::number;
        case UTF8PROC_CATEGORY_ZS:
        case UTF8PROC_CATEGORY_ZL:
        case UTF8PROC_CATEGORY_ZP:
            return Kind::space;
        default:
            return Kind::other;
    }
}

// The kinds of the ASCII characters, the most frequent by far.
const std::array<Kind, 128> ascii_kinds = [] {
    std::array<Kind, 128> kinds{};
    for (char32_t c = 0; c < 128; ++c) kinds[c] = kind_of(c);
    return kinds;
}();

Unit unit_at(std::string_view text, std::size_t at) {
    if (at >= text.size()) return {0, 0, Kind::end};
    if (const auto b = static_cast<unsigned char>(text[at]); b < 0x80) return {b, 1, ascii_kinds[b]};
    const Sequence s = utf8_sequence(text.substr(at));
    if (s.status != Sequence::valid) return {static_cast<unsigned char>(text[at]), 1, Kind::invalid};
    return {s.cp, s.length, kind_of(s.cp)};
}

// Where a stretch between digits ends: the end of the text, a number (Digits cut there) or an
// invalid byte (a piece of its own).
bool ends_stretch(Kind k) { return k == Kind::end || k == Kind::number || k == Kind::invalid; }

// The end of GPT-2's pattern's match at `at`, where `u` (a letter, a space or other) starts.
std::size_t gpt2_match(std::string_view text, std::size_t at, Unit u) {
    // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
    if (u.cp == U'\'') {
        const char32_t a = unit_at(text, at + 1).cp;
        if (a == U's' || a == U't' || a == U'm' || a == U'd') return at + 2;
        const char32_t b = a == 0 ? 0 : unit_at(text, at + 2).cp;
        if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return at + 3;
    }
    // ` ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+`: one optional space, then a run of one kind. (Numbers
    // never get here: Digits made each a piece of its own.)
    std::size_t end = at;
    if (u.cp == U' ') {
        const Unit next = unit_at(text, at + 1);
        if (next.kind == Kind::letter || next.kind == Kind::other) end = at + 1, u = next;
    }
    if (u.kind == Kind::letter || u.kind == Kind::other) {
        const Kind run = u.kind;
        for (Unit w = u; w.kind == run; w = unit_at(text, end)) end += w.length;
        return end;
    }
    // `\s+(?!\S)|\s+`: a run of whitespace. Before a non-space its last character is left to start
    // the next piece (" world" keeps its space), unless the run is that one character.
    std::size_t last = at, count = 0;
    Unit w = u;
    for (; w.kind == Kind::space; w = unit_at(text, end)) last = end, end += w.length, ++count;
    if (ends_stretch(w.kind) || count == 1) return end;
    return last;
}

// Calls piece(start, length) for each piece of `text`, in order.
template <class F>
void for_each_piece(std::string_view text, F&& piece) {
    for (std::size_t at = 0; at < text.size();) {
        const Unit u = unit_at(text, at);
        const std::size_t end =
            (u.kind == Kind::number || u.kind == Kind::invalid) ? at + u.length : gpt2_match(text, at, u);
        piece(at, end - at);
        at = end;
    }
}

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The vocabulary

// Pieces of up to `max_piece` bytes keep their ids; the cache starts again empty at `max_entries`.
struct Tokenizer::Cache {
    static constexpr std::size_t max_piece = 64;
    static constexpr std::size_t max_entries = std::size_t{1} << 16;
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<std::int32_t>, StringHash, std::equal_to<>> ids;
};

Tokenizer::Tokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
                     const std::vector<std::int64_t>& token_types)
    : pieces_(std::move(tokens)), cache_(std::make_shared<Cache>()) {
    if (pieces_.empty()) throw usage_error("bpe tokenizer: the vocabulary is empty");
    if (pieces_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw usage_error(fmt::format("bpe tokenizer: {} tokens are too many", pieces_.size()));
    if (!token_types.empty() && token_types.size() != pieces_.size()) {
        throw usage_error(
            fmt::format("bpe tokenizer: {} token types for {} tokens", token_types.size(), pieces_.size()));
    }
    bytes_.resize(pieces_.size());
    special_.resize(pieces_.size());
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
        const auto id = static_cast<std::int32_t>(i);
        ids_.emplace(pieces_[i], id);
        const auto type = token_types.empty() ? TokenType::normal : static_cast<TokenType>(token_types[i]);
        special_[i] = type == TokenType::control || type == TokenType::user_defined;
        bytes_[i] = special_[i] ? pieces_[i] : piece_bytes(pieces_[i]);
        if (special_[i] && !pieces_[i].empty()) specials_.push_back(id);
    }
    // Longest first, so that at one place the longest special token wins.
    std::stable_sort(specials_.begin(), specials_.end(),
                     [&](std::int32_t a, std::int32_t b) { return pieces_[a].size() > pieces_[b].size(); });
    for (std::int32_t id : specials_) special_first_byte_[static_cast<unsigned char>(pieces_[id][0])] = true;

    for (unsigned b = 0; b < 256; ++b) {
        std::string c;
        append_utf8(c, alphabet().char_of[b]);
        byte_ids_[b] = find(c);
    }

    if (merges.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
        throw usage_error(fmt::format("bpe tokenizer: {} merges are too many", merges.size()));
    merges_.reserve(merges.size());
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const std::size_t space = m.find(' ');
        if (space == 0 || space == std::string::npos || space + 1 == m.size() || m.find(' ', space + 1) != m.npos) {
            throw usage_error(
                fmt::format("bpe tokenizer: merge {} \"{}\" is not two tokens separated by a space", rank, m));
        }
        const std::string_view left = std::string_view(m).substr(0, space);
        const std::string_view right = std::string_view(m).substr(space + 1);
        const std::string joined = std::string(left) + std::string(right);
        const std::int32_t l = find(left), r = find(right), merged = find(joined);
        if (l < 0 || r < 0 || merged < 0) {
            const std::string_view absent = l < 0 ? left : r < 0 ? right : std::string_view(joined);
            throw usage_error(fmt::format("bpe tokenizer: merge {} \"{}\" names \"{}\", which is not in the vocabulary",
                                          rank, m, absent));
        }
        // A repeated pair keeps its first (lowest) rank.
        merges_.emplace(pair_key(l, r), Merge{static_cast<std::int32_t>(rank), merged});
    }
}

std::int32_t Tokenizer::check_id(std::int32_t id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= pieces_.size()) {
        throw usage_error(fmt::format("token id {} is outside the vocabulary (0..{})", id, pieces_.size() - 1));
    }
    return id;
}

std::string_view Tokenizer::piece(std::int32_t id) const { return pieces_[static_cast<std::size_t>(check_id(id))]; }

std::string_view Tokenizer::token_bytes(std::int32_t id) const {
    return bytes_[static_cast<std::size_t>(check_id(id))];
}

std::int32_t Tokenizer::find(std::string_view piece) const {
    const auto it = ids_.find(piece);
    return it == ids_.end() ? -1 : it->second;
}

bool Tokenizer::is_special(std::int32_t id) const { return special_[static_cast<std::size_t>(check_id(id))]; }

// ---------------------------------------------------------------------------------------------
// Encoding

std::vector<std::string> Tokenizer::pre_tokenize(std::string_view text) const {
    std::vector<std::string> pieces;
    for_each_piece(text, [&](std::size_t at, std::size_t n) { pieces.emplace_back(text.substr(at, n)); });
    return pieces;
}

// BPE on one piece of n bytes, in O(n log n): the symbols are a linked list, the candidate pairs a
// heap ordered by (rank, position). A merge leaves the merged symbol at the left one's place and
// offers the two new pairs it makes; a candidate whose symbols changed since is stale and skipped
// (a symbol's id changes only by growing longer, so an unchanged id means an unchanged symbol).
void Tokenizer::merge_into(std::string_view piece, std::vector<std::int32_t>& out) const {
    struct Symbol {
        std::int32_t id;          // -1 once merged into its left neighbour
        std::int32_t prev, next;  // indices into `symbols`, -1 at either end
    };
    thread_local std::vector<Symbol> symbols;  // reused: most pieces are a few bytes long
    symbols.clear();
    for (char ch : piece) {
        const std::int32_t id = byte_ids_[static_cast<unsigned char>(ch)];
        if (id < 0) continue;  // a byte with no token is dropped (Hugging Face's BPE without an unknown token)
        const auto i = static_cast<std::int32_t>(symbols.size());
        symbols.push_back({id, i - 1, i + 1});
    }
    if (symbols.empty()) return;
    symbols.back().next = -1;

    struct Candidate {
        std::int32_t rank, left, right, left_id, right_id, merged;
    };
    // std::push_heap keeps the largest on top: here the lowest rank, then the leftmost.
    auto later = [](const Candidate& a, const Candidate& b) {
        return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    };
    thread_local std::vector<Candidate> heap;
    heap.clear();
    auto offer = [&](std::int32_t left) {
        const std::int32_t right = symbols[left].next;
        if (right < 0) return;
        const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
        if (it == merges_.end()) return;
        heap.push_back({it->second.rank, left, right, symbols[left].id, symbols[right].id, it->second.merged});
        std::push_heap(heap.begin(), heap.end(), later);
    };
    for (std::int32_t i = 0; i + 1 < static_cast<std::int32_t>(symbols.size()); ++i) offer(i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const Candidate c = heap.back();
        heap.pop_back();
        Symbol& left = symbols[c.left];
        Symbol& right = symbols[c.right];
        if (left.id != c.left_id || left.next != c.right || right.id != c.right_id) continue;  // stale
        left.id = c.merged;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = c.left;
        right.id = -1;
        if (left.prev >= 0) offer(left.prev);
        offer(c.left);
    }
    for (std::int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

std::vector<std::int32_t> Tokenizer::merge(std::string_view piece) const {
    std::vector<std::int32_t> ids;
    merge_into(piece, ids);
    return ids;
}

void Tokenizer::encode_plain(std::string_view text, std::vector<std::int32_t>& out) const {
    for_each_piece(text, [&](std::size_t at, std::size_t n) {
        const std::string_view piece = text.substr(at, n);
        if (n > Cache::max_piece) return merge_into(piece, out);
        {
            std::lock_guard lock(cache_->mutex);
            if (const auto it = cache_->ids.find(piece); it != cache_->ids.end()) {
                out.insert(out.end(), it->second.begin(), it->second.end());
                return;
            }
        }
        const std::size_t first = out.size();
        merge_into(piece, out);
        std::lock_guard lock(cache_->mutex);
        if (cache_->ids.size() >= Cache::max_entries) cache_->ids.clear();
        cache_->ids.emplace(piece,
                            std::vector<std::int32_t>(out.begin() + static_cast<std::ptrdiff_t>(first), out.end()));
    });
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
    std::vector<std::int32_t> ids;
    std::size_t plain = 0;  // where the text not yet encoded starts
    if (parse_special && !specials_.empty()) {
        for (std::size_t at = 0; at < text.size(); ++at) {
            if (!special_first_byte_[static_cast<unsigned char>(text[at])]) continue;
            const auto hit = std::find_if(specials_.begin(), specials_.end(), [&](std::int32_t id) {
                return text.substr(at).starts_with(pieces_[static_cast<std::size_t>(id)]);
            });
            if (hit == specials_.end()) continue;
            encode_plain(text.substr(plain, at - plain), ids);
            ids.push_back(*hit);
            plain = at + pieces_[static_cast<std::size_t>(*hit)].size();
            at = plain - 1;
        }
    }
    encode_plain(text.substr(plain), ids);
    return ids;
}

// ---------------------------------------------------------------------------------------------
// Decoding

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
    std::string out;
    for (std::int32_t id : ids) out += token_bytes(id);
    return out;
}

std::string Tokenizer::Stream::push(std::int32_t id) {
    pending_ += tokenizer_->token_bytes(id);
    std::string out;
    std::size_t at = 0;
    while (at < pending_.size()) {
        const Sequence s = utf8_sequence(std::string_view(pending_).substr(at));
        if (s.status == Sequence::truncated) break;  // wait for the token that completes it
        if (s.status == Sequence::valid) {
            out.append(pending_, at, s.length);
        } else {
            out += replacement;
        }
        at += s.length;
    }
    pending_.erase(0, at);
    return out;
}

std::string Tokenizer::Stream::flush() {
    std::string out = pending_.empty() ? std::string() : std::string(replacement);
    pending_.clear();
    return out;
}

}  // namespace headwise::bpe
