// kernels/launch.hpp -- launching an attention kernel on the emulator the way emulate() does.
//
// emulate() runs the kernels of src/kernels; exercise 06 runs the learner's, which have the same
// signature. Both go through launch_on_emulator: version v's grid and block (launch_config),
// every buffer wrapped with its extent, the same AttentionArgs. For g++ builds (the emulator).
#pragma once

#include "kernels/attention_kernels.hpp"
#include "kernels/portable.cuh"

namespace headwise::kernels {

// What every fp32 attention kernel here looks like: q, k, v (B, H, N, d_head), key_len (B), out.
using AttentionKernel = void (*)(global_ptr<const float> q, global_ptr<const float> k, global_ptr<const float> v,
                                 global_ptr<const int> key_len, global_ptr<float> out, AttentionArgs a);

// What a kernel is told of the problem: its sizes, the scale (1 / sqrt(d_head) unless given), causal.
inline AttentionArgs attention_args(const Problem& p) {
    return {p.batch, p.heads, p.seq, p.d_head, p.effective_scale(), p.causal};
}

// Runs `kernel` with version v's launch configuration on the emulator; validates like emulate().
emulator::LaunchStats launch_on_emulator(Version v, const Problem& p, const Inputs& in, float* out,
                                         emulator::Schedule schedule, AttentionKernel kernel);

}  // namespace headwise::kernels
