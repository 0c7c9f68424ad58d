// headwise/io/gpu_reports.hpp -- the two reports lesson 06 reads about the CUDA kernels: the timings
// scripts/gpu-check measured on a GPU (a CSV), and the registers, stack and shared memory ptxas
// gave each kernel (scripts/kernel-resources). Neither needs a GPU or nvcc to read; a file that
// cannot be read or does not parse is a usage_error naming it.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace headwise::gpu_reports {

// One row of the CSV scripts/gpu-check writes (docs/figures/gpu/06_gpu_timings.csv).
struct GpuRow {
    std::string gpu, version, dtype, note;
    int seq = 0;
    bool causal = false;
    double median_ms = 0.0, tflops = 0.0;  // 0: not timed (the note says why)
    int registers = -1;                    // as cudaFuncGetAttributes reported in that run (-1: none)
    long long shared_bytes = -1, local_bytes = -1;
};
struct GpuResults {
    std::string provenance;  // the file's first line: which GPU, driver, CUDA, date
    std::vector<GpuRow> rows;
};

// Reads the CSV: a "# ..." provenance line, a header, then one row per (version, dtype, N).
// Columns by name, so later columns may be added.
GpuResults read_gpu_results(const std::filesystem::path& file);

// What ptxas reports for one kernel: registers per thread, stack bytes per thread, static shared
// memory per block.
struct KernelResources {
    int registers = 0, stack = 0;
    long long shared_bytes = 0;
};
struct ResourceFile {
    std::string provenance;                                     // its first line: nvcc, arch, commit, date
    std::map<std::pair<std::string, int>, KernelResources> of;  // (version, d_head; naive: 0)
};

// Reads scripts/kernel-resources' file: "# ..." provenance, a "version ..." header, then per line
// version, d_head, registers, stack, spill stores, spill loads, shared bytes.
ResourceFile read_kernel_resources(const std::filesystem::path& file);

}  // namespace headwise::gpu_reports
