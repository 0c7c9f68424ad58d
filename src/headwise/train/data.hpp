// headwise/train/data.hpp -- the sequences an induction head is needed for, and a control.
//
// random-repeat (the lesson's task): each sequence is N uniformly random tokens in which one random
// segment (length 4 .. N/2) appears a second time at a random later place. Nothing but content
// predicts the second copy: a model must find the earlier occurrence of the current token and copy
// the token that followed it.
// fixed-period (a control): the first N/2 tokens random, the next N/2 their copy. The repeat is
// always at the same offset, so position alone predicts it: a head that attends from position n to
// n - N/2 + 1 copies correctly without knowing which token came before which.
#pragma once

#include "headwise/base/random.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headwise::train {

enum class DataKind { random_repeat, fixed_period };

// "random-repeat" or "fixed-period" -> the kind; anything else: usage_error naming both.
DataKind parse_data_kind(std::string_view name);
std::string name_of(DataKind kind);

// Where the repeat is: tokens [first, first + length) reappear at [second, second + length).
struct Repeat {
    std::size_t first = 0, second = 0, length = 0;
};

struct Batch {
    std::size_t batch = 0, seq = 0;    // B, N
    std::vector<std::int32_t> tokens;  // (B, N) row-major
    std::vector<Repeat> repeats;       // (B)
    std::int32_t token(std::size_t b, std::size_t n) const { return tokens[b * seq + n]; }
};

// A batch of B sequences of N tokens from [0, vocab). Needs N >= 8 (a segment of 4, twice) and vocab >= 2.
Batch make_batch(Random& rng, std::size_t batch, std::size_t seq, std::size_t vocab,
                 DataKind kind = DataKind::random_repeat);

}  // namespace headwise::train
