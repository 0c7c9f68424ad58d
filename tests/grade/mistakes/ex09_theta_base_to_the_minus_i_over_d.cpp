// mistake: theta_i = base^(-i/d_head)
// The exponent lost its factor 2: theta_i = base^(-i/d_head), so the slowest pair turns at base^(-1/2), far too fast.
// theta_i = base^(-2i/d_head) for pair i = 0 .. d_head/2 - 1: the last pair turns at about 1/base per position.
#include "ex09_rope_parts.hpp"

HEADWISE_EX09_WITH([] {
    headwise::ex09::parts::Wrong w;
    w.theta_i_over_d = true;
    return w;
}())
