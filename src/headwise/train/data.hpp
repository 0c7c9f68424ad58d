// headwise/train/data.hpp -- the sequences an induction head is needed for.
//
// Each sequence is N uniformly random tokens in which one random segment (length 4 .. N/2) appears
// a second time at a random later place. Nothing but content predicts the second copy: a model
// must find the earlier occurrence of the current token and copy the token that followed it.
// (A fixed period -- first half random, second half its copy -- would be predictable from
// positions alone, and no previous-token head grows.)
#pragma once

#include "headwise/base/random.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headwise::train {

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
Batch make_batch(Random& rng, std::size_t batch, std::size_t seq, std::size_t vocab);

}  // namespace headwise::train
