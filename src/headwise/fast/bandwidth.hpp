// headwise/fast/bandwidth.hpp -- how fast this machine reads memory, measured: the ceiling of any
// computation that touches each byte once (a decoder's token: lesson 12, `headwise bench`).
#pragma once

#include <cstddef>

namespace headwise::fast {

// GB/s (1e9 bytes a second) of `threads` threads (0: worker_count()) each reading its share of a
// `bytes` buffer from start to end, the best of `rounds` passes (the buffer is written once before
// the first, so no pass pays for first-touch page faults; it lies in 2 MiB pages where the kernel
// grants them, as the decoder's weights do). The buffer should be several times the
// last-level cache.
double read_rate(std::size_t bytes, std::size_t threads = 0, int rounds = 3);

}  // namespace headwise::fast
