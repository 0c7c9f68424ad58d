// split_heads reshaped (B, N, d_model) straight to (B, H, N, d_head): memory order is kept, so head 0 gets token 0, then token 1, ...
// Reshape to (B, N, H, d_head) first, then swap N and H (lesson 02, steps 2 and 3 show both).
#include "split_merge.hpp"

#include "headwise/reference/attention.hpp"

#include <xtensor/xmanipulation.hpp>

namespace headwise::ex02 {

Tensor4 split_heads(const Tensor3& x, std::size_t heads) {
    const std::size_t batch = x.shape()[0], n = x.shape()[1], d_model = x.shape()[2];
    if (heads == 0 || d_model % heads != 0) throw usage_error("split_heads: heads must divide d_model");
    return xt::reshape_view(x, std::array<std::size_t, 4>{batch, heads, n, d_model / heads});  // no transpose
}

Tensor3 merge_heads(const Tensor4& x) { return headwise::merge_heads(x); }

}  // namespace headwise::ex02
