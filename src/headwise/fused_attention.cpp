#include "headwise/fused_attention.hpp"

#include "headwise/blas.hpp"
#include "headwise/vexp.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace headwise::detail {

namespace {

constexpr std::size_t query_tile = 64;
constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// Restores OpenBLAS's own thread count when the tiles are done (each tile's small GEMMs run
// single-threaded inside our workers; the big projections keep both cores to themselves).
class BlasThreadsScope {
public:
    explicit BlasThreadsScope(int n) : saved_(blas::threads()) { blas::set_threads(n); }
    ~BlasThreadsScope() { blas::set_threads(saved_); }
    BlasThreadsScope(const BlasThreadsScope&) = delete;
    BlasThreadsScope& operator=(const BlasThreadsScope&) = delete;

private:
    int saved_;
};

struct Tile {
    std::size_t b, h, i0, i1;
};

void run_tile(const AttentionShape& s, const Tile& t, Strided<const float> q, Strided<const float> k,
              Strided<const float> v, Strided<float> out, float scale, const AttentionOptions& o,
              std::vector<float>& scores) {
    const std::size_t rows = t.i1 - t.i0;
    // Keys this tile can see: with a causal mask, none beyond its last query.
    const std::size_t keys = o.causal ? std::min(s.nk, t.i1) : s.nk;
    float* dst = out.data + t.b * out.batch + t.h * out.head + t.i0 * out.row;
    if (keys == 0) {
        for (std::size_t i = 0; i < rows; ++i) std::fill(dst + i * out.row, dst + i * out.row + s.d_head, 0.0f);
        return;
    }
    scores.resize(rows * keys);
    const float* qp = q.data + t.b * q.batch + t.h * q.head + t.i0 * q.row;
    const float* kp = k.data + t.b * k.batch + t.h * k.head;
    const float* vp = v.data + t.b * v.batch + t.h * v.head;
    // scores (rows, keys) = q_tile (rows, d_head) . k^T (d_head, keys) * scale
    blas::gemm(false, true, rows, keys, s.d_head, scale, qp, q.row, kp, k.row, 0.0f, scores.data(), keys);

    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t i = t.i0 + r;
        float* row = scores.data() + r * keys;
        if (o.causal)
            for (std::size_t j = i + 1; j < keys; ++j) row[j] = neg_inf;
        if (o.attn_mask != nullptr)
            for (std::size_t j = 0; j < keys; ++j)
                if ((*o.attn_mask)(i, j)) row[j] = neg_inf;
        if (o.key_padding_mask != nullptr)
            for (std::size_t j = 0; j < keys; ++j)
                if ((*o.key_padding_mask)(t.b, j)) row[j] = neg_inf;
        const float m = *std::max_element(row, row + keys);
        if (m == neg_inf) {  // every key masked: zeros, as everywhere in headwise
            std::fill(row, row + keys, 0.0f);
            continue;
        }
        const float inv = 1.0f / exp_shifted_sum(row, keys, m);
        for (std::size_t j = 0; j < keys; ++j) row[j] *= inv;
    }
    // out_tile (rows, d_head) = weights (rows, keys) . v (keys, d_head)
    blas::gemm(false, false, rows, s.d_head, keys, 1.0f, scores.data(), keys, vp, v.row, 0.0f, dst, out.row);
}

}  // namespace

void fused_attention(const AttentionShape& s, Strided<const float> q, Strided<const float> k, Strided<const float> v,
                     Strided<float> out, float scale, const AttentionOptions& options) {
    std::vector<Tile> tiles;
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i0 = 0; i0 < s.nq; i0 += query_tile) tiles.push_back({b, h, i0, std::min(s.nq, i0 + query_tile)});
    // Causal tiles near the end of the sequence cost the most: hand those out first.
    if (options.causal)
        std::stable_sort(tiles.begin(), tiles.end(), [](const Tile& a, const Tile& b) { return a.i1 > b.i1; });

    const std::size_t workers =
        std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), tiles.size());
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&] {
        try {
            std::vector<float> scores;
            for (std::size_t t = next++; t < tiles.size(); t = next++)
                run_tile(s, tiles[t], q, k, v, out, scale, options, scores);
        } catch (...) {
            const std::lock_guard lock(failure_mutex);
            failure = std::current_exception();
            next = tiles.size();  // the others stop at their next tile
        }
    };
    if (workers <= 1) {
        work();
    } else {
        BlasThreadsScope single(1);
        std::vector<std::jthread> pool;
        for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work);
        work();
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace headwise::detail
