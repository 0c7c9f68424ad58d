// kernels/attention_backward.cpp -- the backward kernels compiled by g++ for the CPU emulator, and
// the forward they follow (the same .cuh files nvcc compiles in device.cu).
#include "kernels/attention_backward.hpp"

#include "kernels/backward_flash.cuh"
#include "kernels/backward_naive.cuh"
#include "kernels/dispatch.hpp"
#include "kernels/launch.hpp"
#include "kernels/tiled.cuh"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

namespace headwise::kernels {

std::string_view name(BackwardVersion v) { return v == BackwardVersion::naive ? "naive_backward" : "flash_backward"; }

bool supports(BackwardVersion, int d_head) { return supports(Version::tiled, d_head); }

void validate(BackwardVersion v, const Problem& problem, const int* key_len) {
    validate(Version::tiled, problem, key_len);  // sizes, d_head, key_len: the forward's checks
    if (v == BackwardVersion::naive && scores_elements(problem) > naive_scratch_limit)
        throw std::invalid_argument("the naive backward's (B, H, N, N) P and dS would be " +
                                    std::to_string(scores_elements(problem) * sizeof(float) >> 20) +
                                    " MiB each, above the limit of 8192 MiB (the flash backward needs neither)");
}

std::array<unsigned, 3> row_grid(const Problem& problem, int per_block) {
    return {static_cast<unsigned>((problem.seq + per_block - 1) / per_block), static_cast<unsigned>(problem.heads),
            static_cast<unsigned>(problem.batch)};
}

namespace {

dim3 grid_of(const Problem& problem, int per_block) {
    const std::array<unsigned, 3> g = row_grid(problem, per_block);
    return dim3(g[0], g[1], g[2]);
}

emulator::LaunchStats& operator+=(emulator::LaunchStats& sum, const emulator::LaunchStats& s) {
    sum.traffic += s.traffic;
    sum.shared.accesses += s.shared.accesses, sum.shared.requests += s.shared.requests;
    sum.shared.wavefronts += s.shared.wavefronts;
    sum.warp_collectives += s.warp_collectives, sum.blocks += s.blocks, sum.barriers += s.barriers;
    sum.threads_per_block = std::max(sum.threads_per_block, s.threads_per_block);
    return sum;
}

// Version 1's kernels: P from the saved lse (counted with the forward), then rows and columns.
void naive_backward(const Problem& problem, const BackwardInputs& in, const Gradients& g, const std::vector<float>& lse,
                    emulator::Schedule schedule, BackwardStats& stats) {
    const std::size_t n = qkv_elements(problem), nn = scores_elements(problem);
    const AttentionArgs a = attention_args(problem);
    const dim3 grid = grid_of(problem, NaiveBackwardShape::threads), block(NaiveBackwardShape::threads);
    const global_ptr<const float> q(in.q, n), k(in.k, n), v(in.v, n), d_out(in.d_out, n);
    const global_ptr<const int> key_len(in.key_len, std::size_t(problem.batch));
    std::vector<float> probs(nn), d_scores(nn);  // (B, H, N, N) each
    const global_ptr<float> p_w(probs.data(), nn), ds_w(d_scores.data(), nn);
    const global_ptr<const float> p_r(probs.data(), nn), ds_r(d_scores.data(), nn);
    stats.forward += emulator::launch(schedule, grid, block, attention_weights, q, k, key_len,
                                      global_ptr<const float>(lse.data(), lse.size()), p_w, a);
    stats.backward = emulator::launch(schedule, grid, block, attention_backward_naive_rows, k, v, key_len, p_r, d_out,
                                      ds_w, global_ptr<float>(g.dq, n), a);
    stats.backward += emulator::launch(schedule, grid, block, attention_backward_naive_columns, q, key_len, p_r, d_out,
                                       ds_r, global_ptr<float>(g.dk, n), global_ptr<float>(g.dv, n), a);
}

// Version 2's: delta = rowsum(dO o O), then one block per key tile; dQ accumulates from zero.
void flash_backward(const Problem& problem, const BackwardInputs& in, const Gradients& g, const std::vector<float>& out,
                    const std::vector<float>& lse, emulator::Schedule schedule, BackwardStats& stats) {
    const std::size_t n = qkv_elements(problem);
    const AttentionArgs a = attention_args(problem);
    const global_ptr<const float> d_out(in.d_out, n);
    std::vector<float> delta(lse.size());  // (B, H, N)
    stats.backward =
        emulator::launch(schedule, grid_of(problem, BackwardDeltaShape::threads), dim3(BackwardDeltaShape::threads),
                         attention_backward_delta, global_ptr<const float>(out.data(), n), d_out,
                         global_ptr<float>(delta.data(), delta.size()), a);
    std::fill(g.dq, g.dq + n, 0.0f);
    stats.backward += with_d_head(problem.d_head, [&](auto d) {
        constexpr int D = decltype(d)::value;
        constexpr int keys = FlashBackwardShape<D>::keys;
        return emulator::launch(
            schedule, grid_of(problem, keys), dim3(keys), attention_backward_flash<D>, global_ptr<const float>(in.q, n),
            global_ptr<const float>(in.k, n), global_ptr<const float>(in.v, n),
            global_ptr<const int>(in.key_len, std::size_t(problem.batch)), d_out,
            global_ptr<const float>(lse.data(), lse.size()), global_ptr<const float>(delta.data(), delta.size()),
            global_ptr<float>(g.dq, n), global_ptr<float>(g.dk, n), global_ptr<float>(g.dv, n), a);
    });
}

}  // namespace

emulator::LaunchStats emulate_with_lse(const Problem& problem, const Inputs& in, float* out, float* lse,
                                       emulator::Schedule schedule) {
    validate(Version::tiled, problem, in.key_len);
    const LaunchConfig cfg = launch_config(Version::tiled, problem);
    const std::size_t n = qkv_elements(problem), rows = n / std::size_t(problem.d_head);
    return with_d_head(problem.d_head, [&](auto d) {
        return emulator::launch(schedule, dim3(cfg.grid[0], cfg.grid[1], cfg.grid[2]), dim3(cfg.block[0]),
                                attention_tiled_lse<decltype(d)::value>, global_ptr<const float>(in.q, n),
                                global_ptr<const float>(in.k, n), global_ptr<const float>(in.v, n),
                                global_ptr<const int>(in.key_len, std::size_t(problem.batch)),
                                global_ptr<float>(out, n), global_ptr<float>(lse, rows), attention_args(problem));
    });
}

BackwardStats emulate_backward(BackwardVersion v, const Problem& problem, const BackwardInputs& in, const Gradients& g,
                               emulator::Schedule schedule) {
    validate(v, problem, in.key_len);
    const std::size_t n = qkv_elements(problem);
    std::vector<float> out(n), lse(n / std::size_t(problem.d_head));  // (B, H, N, d_head), (B, H, N)
    BackwardStats stats;
    stats.forward = emulate_with_lse(problem, {in.q, in.k, in.v, in.key_len}, out.data(), lse.data(), schedule);
    if (v == BackwardVersion::naive)
        naive_backward(problem, in, g, lse, schedule, stats);
    else
        flash_backward(problem, in, g, out, lse, schedule, stats);
    return stats;
}

std::vector<BackwardTraffic> backward_traffic(const Problem& problem, std::uint64_t seed) {
    const std::size_t n = qkv_elements(problem);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> q(n), k(n), v(n), d_out(n), dq(n), dk(n), dv(n);
    for (std::vector<float>* x : {&q, &k, &v, &d_out})
        for (float& e : *x) e = normal(rng);
    const std::vector<int> key_len(std::size_t(problem.batch), problem.seq);
    std::vector<BackwardTraffic> rows;
    for (BackwardVersion version : backward_versions) {
        const BackwardStats s =
            emulate_backward(version, problem, {q.data(), k.data(), v.data(), key_len.data(), d_out.data()},
                             {dq.data(), dk.data(), dv.data()});
        rows.push_back({version, s.forward.traffic, s.backward.traffic});
    }
    return rows;
}

}  // namespace headwise::kernels
