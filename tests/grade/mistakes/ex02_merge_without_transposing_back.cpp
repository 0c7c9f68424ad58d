// merge_heads reshaped (B, H, N, d_head) straight to (B, N, d_model): token n's output row is filled from whatever heads and tokens lie next to each other in memory.
// Swap H and N back to (B, N, H, d_head) first, then flatten the last two axes (lesson 02, step 4).
#include "split_merge.hpp"

#include "headwise/reference/attention.hpp"

#include <xtensor/xmanipulation.hpp>

namespace headwise::ex02 {

Tensor4 split_heads(const Tensor3& x, std::size_t heads) { return headwise::split_heads(x, heads); }

Tensor3 merge_heads(const Tensor4& x) {
    const std::size_t batch = x.shape()[0], heads = x.shape()[1], n = x.shape()[2], d_head = x.shape()[3];
    return xt::reshape_view(x, std::array<std::size_t, 3>{batch, n, heads * d_head});  // no transpose back
}

}  // namespace headwise::ex02
