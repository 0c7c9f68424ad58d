// runner/cmd_generate.hpp -- `headwise generate`: its flags (cmd_generate_flags.cpp, where CLI11 is compiled
// with the other commands') and the work they select (cmd_generate.cpp, which never includes CLI11).
#pragma once

#include <cstdint>
#include <string>

namespace headwise::runner {

struct GenerateArgs {
    std::string prompt, logits, model, timings;
    bool prompt_given = false, chat = false, exact = false, ids = false, no_stop = false;
    long long max_tokens = 64, top_k = 0, threads = 0, prompt_tokens = 0;
    double temperature = 0.0, top_p = 1.0;
    unsigned long long seed = 0;
};

int run_generate(GenerateArgs a);

}  // namespace headwise::runner
