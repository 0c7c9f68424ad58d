// runner/cmd_heads.hpp -- `headwise heads`: its flags (cmd_heads_flags.cpp, where CLI11 is compiled
// with the other commands') and the work they select (cmd_heads.cpp, which never includes CLI11).
#pragma once

#include <optional>
#include <string>

namespace headwise::runner {

struct HeadsArgs {
    std::string sentence, sentence_b;
    std::optional<long long> layer, head;
    bool tokens_only = false, sentence_b_given = false;
    std::string attention, embedding, html;
};

int run_heads(const HeadsArgs& a);

}  // namespace headwise::runner
