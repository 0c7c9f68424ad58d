// mistake: cached keys rotated at position 0
// The new keys were rotated as if they started the sequence (position 0), not at their place in the cache.
// New token i sits at position cache.length + i: rotate its key there, once, before storing it.
#include "ex09_rope_parts.hpp"

HEADWISE_EX09_WITH([] {
    headwise::ex09::parts::Wrong w;
    w.keys_at_zero = true;
    return w;
}())
