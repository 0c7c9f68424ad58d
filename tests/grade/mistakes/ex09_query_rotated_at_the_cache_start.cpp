// mistake: the query rotated at the cache's start
// The new queries were rotated from position 0 (the cache's start) instead of their own positions cache.length + i.
// Query and key must be rotated at their own positions: only then does q . k depend on the distance between them.
#include "ex09_rope_parts.hpp"

HEADWISE_EX09_WITH([] {
    headwise::ex09::parts::Wrong w;
    w.query_at_start = true;
    return w;
}())
