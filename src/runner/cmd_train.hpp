// runner/cmd_train.hpp -- `headwise train`: its flags (cmd_train_flags.cpp, where CLI11 is compiled
// with the other commands') and the work they select (cmd_train.cpp, which never includes CLI11).
#pragma once

#include <cstdint>
#include <string>

namespace headwise::runner {

struct TrainArgs {
    long long vocab = 64, context = 32, d_model = 64, heads = 4, layers = 2, batch = 32, steps = 2000;
    double lr = 3e-3, weight_decay = 0.01;
    unsigned long long seed = 1;
    long long threads = 0;  // 0: the machine's (HEADWISE_THREADS)
    std::string data = "random-repeat", save, log;
};

int run_training(const TrainArgs& a);

}  // namespace headwise::runner
