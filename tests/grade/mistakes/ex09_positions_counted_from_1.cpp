// mistake: positions counted from 1
// Token n was rotated at position first_position + n + 1: every angle is one position too far.
// The first token of a sequence sits at position 0 and is not rotated at all; token n sits at first_position + n.
#include "ex09_rope_parts.hpp"

HEADWISE_EX09_WITH([] {
    headwise::ex09::parts::Wrong w;
    w.from_one = true;
    return w;
}())
