// emulator/runtime.hpp -- the emulator as the host sees it: schedules, counters, errors.
//
// No CUDA vocabulary here (that is emulator/emulator.hpp, included only where kernels are
// compiled), so host code can name a schedule or read a traffic count without the macros.
#pragma once

#include <cstdint>
#include <stdexcept>

namespace headwise::emulator {

enum class Schedule { fibers, fibers_reversed, threads };
const char* name(Schedule s);

// Global-memory accesses counted during one launch: element loads and stores, and their bytes.
struct Traffic {
    std::uint64_t loads = 0, stores = 0;
    std::uint64_t load_bytes = 0, store_bytes = 0;
    std::uint64_t bytes() const { return load_bytes + store_bytes; }
    Traffic& operator+=(const Traffic& o) {
        loads += o.loads, stores += o.stores, load_bytes += o.load_bytes, store_bytes += o.store_bytes;
        return *this;
    }
};

struct LaunchStats {
    Traffic traffic;
    std::uint64_t blocks = 0;
    std::uint64_t threads_per_block = 0;
    std::uint64_t barriers = 0;  // __syncthreads() completed, summed over blocks
};

// A kernel did something a GPU would not forgive (an index outside its buffer, a __syncthreads()
// that not every thread reached) or the launch configuration is invalid. The message names the
// block and thread.
struct launch_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The schedule launch() uses when none is given (fibers; threads under ThreadSanitizer).
Schedule default_schedule();
void set_default_schedule(Schedule s);

}  // namespace headwise::emulator
