// After reshaping to (B, N, H, d_head) the last two axes were swapped, giving (B, N, d_head, H): the heads axis must end up second, before the tokens.
// Swap axes 1 and 2 (N and H) to get (B, H, N, d_head), and undo exactly that swap in merge_heads (lesson 02, steps 2 and 4).
#include "split_merge.hpp"

#include <xtensor/xmanipulation.hpp>

namespace headwise::ex02 {

Tensor4 split_heads(const Tensor3& x, std::size_t heads) {
    const std::size_t batch = x.shape()[0], n = x.shape()[1], d_model = x.shape()[2];
    if (heads == 0 || d_model % heads != 0) throw usage_error("split_heads: heads must divide d_model");
    const Tensor4 grouped = xt::reshape_view(x, std::array<std::size_t, 4>{batch, n, heads, d_model / heads});
    return xt::transpose(grouped, {0, 1, 3, 2});  // (B, N, d_head, H)
}

Tensor3 merge_heads(const Tensor4& x) {
    const std::size_t batch = x.shape()[0], heads = x.shape()[1], n = x.shape()[2], d_head = x.shape()[3];
    const Tensor4 swapped = xt::transpose(x, {0, 1, 3, 2});  // (B, H, d_head, N)
    return xt::reshape_view(swapped, std::array<std::size_t, 3>{batch, n, heads * d_head});
}

}  // namespace headwise::ex02
