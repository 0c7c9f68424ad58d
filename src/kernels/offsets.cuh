// kernels/offsets.cuh -- element offsets into (B, H, N, d_head) buffers, in 64 bits.
//
// B * H * N * d_head passes 2^31 long before a GPU runs out of memory (B = 32, H = 32, N = 16384,
// d_head = 128 is 2^31 elements, 8 GiB), and naive's (B, H, N, N) scratch does at B = 8, H = 16,
// N = 4096 already; an offset computed in int would wrap around and touch another head's rows. Every kernel computes offsets with these two functions: the sizes arrive as int, the
// product is formed in std::size_t before it can overflow.
#pragma once

#include "kernels/portable.cuh"

#include <cstddef>

namespace headwise::kernels {

// Row index of row 0 of head h of sequence b among all B * H * N rows: (b * H + h) * N.
__host__ __device__ constexpr std::size_t head_row(int b, int h, int heads, int seq) {
    return (static_cast<std::size_t>(b) * static_cast<std::size_t>(heads) + static_cast<std::size_t>(h)) *
           static_cast<std::size_t>(seq);
}
__host__ __device__ constexpr std::size_t head_row(int b, int h, const AttentionArgs& a) {
    return head_row(b, h, a.heads, a.seq);
}

// Offset of element c of row `row` in rows of `width` elements: row * width + c.
__host__ __device__ constexpr std::size_t at(std::size_t row, int width, int c = 0) {
    return row * static_cast<std::size_t>(width) + static_cast<std::size_t>(c);
}

// Who a thread is in a kernel of one thread per row -- grid (ceil(N / blockDim.x), H, B), thread x
// of block (bx, h, b) owning row bx * blockDim.x + x of head h of sequence b -- and where that
// head's rows start (head_row). The last block's spare threads have row >= N.
struct RowThread {
    int b, h, row;
    std::size_t head;  // head_row(b, h): row 0 of (b, h) among all B * H * N rows
};
__device__ __forceinline__ RowThread row_thread(const AttentionArgs& a) {
    const int b = static_cast<int>(blockIdx.z), h = static_cast<int>(blockIdx.y);
    return {b, h, static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x), head_row(b, h, a)};
}

}  // namespace headwise::kernels
