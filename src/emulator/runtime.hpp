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

// Shared-memory accesses made through shared_tile (emulator/emulator.hpp), grouped the way a warp
// issues them: the k-th access at one source line by each lane of a warp, between two warp-wide
// points (a warp collective or a barrier), is one request. A request is served in wavefronts:
// 32 banks of 4-byte words, one word per bank per wavefront, so it takes as many wavefronts as the
// most distinct words any one bank holds among its addresses (lanes reading the same word share it).
// conflicts() = wavefronts beyond one per request: the serialisation bank conflicts cost.
struct SharedTraffic {
    std::uint64_t accesses = 0;  // per lane
    std::uint64_t requests = 0;  // per warp
    std::uint64_t wavefronts = 0;
    std::uint64_t conflicts() const { return wavefronts - requests; }
};

struct LaunchStats {
    Traffic traffic;
    SharedTraffic shared;
    std::uint64_t warp_collectives = 0;  // shuffles, ballots, __syncwarp()s and wmma calls completed, per warp
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

// Whether launches count shared-memory requests and their bank conflicts (LaunchStats::shared; on
// by default). Counting keeps every lane's address per access until the warp meets -- a quarter of
// a launch's time -- so a program that reads no LaunchStats::shared (the exercise 06 grader) turns
// it off. Races are checked either way.
void set_bank_model(bool on);

}  // namespace headwise::emulator
