#include "headwise/train/data.hpp"

#include "headwise/base/tensor.hpp"

#include <fmt/format.h>

namespace headwise::train {

namespace {

// Uniform in [lo, hi] (inclusive); the modulo bias of a 64-bit draw is far below what training notices.
std::size_t pick(Random& rng, std::size_t lo, std::size_t hi) { return lo + rng.next_u64() % (hi - lo + 1); }

}  // namespace

DataKind parse_data_kind(std::string_view name) {
    if (name == "random-repeat") return DataKind::random_repeat;
    if (name == "fixed-period") return DataKind::fixed_period;
    throw usage_error(fmt::format("--data {}: expected random-repeat or fixed-period", name));
}

std::string name_of(DataKind kind) { return kind == DataKind::fixed_period ? "fixed-period" : "random-repeat"; }

Batch make_batch(Random& rng, std::size_t batch, std::size_t seq, std::size_t vocab, DataKind kind) {
    if (seq < 8) throw usage_error("a sequence needs at least 8 tokens (a segment of 4, twice)");
    if (vocab < 2) throw usage_error("the vocabulary needs at least 2 tokens");
    Batch out;
    out.batch = batch;
    out.seq = seq;
    out.tokens.resize(batch * seq);
    out.repeats.resize(batch);
    for (std::size_t b = 0; b < batch; ++b) {
        std::int32_t* row = &out.tokens[b * seq];
        for (std::size_t n = 0; n < seq; ++n) row[n] = std::int32_t(rng.next_u64() % vocab);
        Repeat& r = out.repeats[b];
        if (kind == DataKind::fixed_period) {
            r = {0, seq / 2, seq / 2};
        } else {
            r.length = pick(rng, 4, seq / 2);
            r.first = pick(rng, 0, seq - 2 * r.length);
            r.second = pick(rng, r.first + r.length, seq - r.length);
        }
        for (std::size_t i = 0; i < r.length; ++i) row[r.second + i] = row[r.first + i];
    }
    return out;
}

}  // namespace headwise::train
