// mistake: the layouts swapped
// The half layout rotated pairs (2i, 2i + 1) and the interleaved one (i, i + d_head/2): the other model's convention.
// half pairs dimension i with i + d_head/2 (Hugging Face's rotate_half), interleaved pairs 2i with 2i + 1 (RoFormer).
#include "ex09_rope_parts.hpp"

HEADWISE_EX09_WITH([] {
    headwise::ex09::parts::Wrong w;
    w.layouts_swapped = true;
    return w;
}())
