// mistake: ALiBi slopes 2^(-8h/H) for every H
// The slopes were 2^(-8h/H) although H is not a power of two: the paper's rule is different there.
// For H not a power of two: the slopes of the largest power of two P below H, then every other slope of 2P.
#include "ex09_rope_parts.hpp"

HEADWISE_EX09_WITH([] {
    headwise::ex09::parts::Wrong w;
    w.power_of_two_rule = true;
    return w;
}())
