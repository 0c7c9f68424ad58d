// mistake: v rotated
// The cache stores the values rotated like the keys: the weighted sum then mixes positions into the content.
// Only q and k carry positions (their dot product becomes a function of m - n); v is stored as projected.
#include "ex09_rope_parts.hpp"

HEADWISE_EX09_WITH([] {
    headwise::ex09::parts::Wrong w;
    w.v_rotated = true;
    return w;
}())
