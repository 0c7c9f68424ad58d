// runner/cmd_attend.hpp -- `headwise attend`: its flags (cmd_attend_flags.cpp, where CLI11 is compiled
// with the other commands') and the work they select (cmd_attend.cpp, which never includes CLI11).
#pragma once

#include <cstdint>
#include <string>

namespace headwise::runner {

struct AttendArgs {
    std::string query, key, value;
    std::string in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias;
    std::string key_padding_mask;
    std::string output, weights;
    std::string grad_output, grads;  // --grad-output dY.npy, --grads DIR
    long long heads = 0;
    long long kv_heads = 0;  // 0: --kv-heads not given, multi-head attention
    bool causal = false;
    bool average_weights = false;
    bool rope = false;
    double rope_base = 10000.0;
    std::string rope_layout = "half";
    long long positions_from = 0;
    bool alibi = false;
};

int run_attend(const AttendArgs& a);

}  // namespace headwise::runner
