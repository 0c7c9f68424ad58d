// headwise/train/checkpoint.hpp -- the trained model as a .safetensors file (F32), loadable by PyTorch.
//
// Tensor names and shapes are the Layout's (embed.weight (V, d), pos_embed.weight (N, d),
// layers.{l}.ln.weight / .bias, layers.{l}.attn.in_proj_weight (3d, d),
// layers.{l}.attn.out_proj.weight (d, d), ln_f.weight / .bias, unembed.weight (V, d)); the
// metadata carries heads, layers, vocab, context and d_model as strings. The file is written to a
// temporary name beside it and renamed, so an interrupted run never leaves a broken checkpoint.
#pragma once

#include "headwise/train/model.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace headwise::train {

// Throws usage_error (one line) unless a file can be created at `path` (checked by creating and
// removing a temporary file beside it), so a run can refuse a bad --save before it trains.
void check_writable(const std::filesystem::path& path);

void save_checkpoint(const std::filesystem::path& path, const Params& params,
                     const std::map<std::string, std::string>& extra_metadata = {});

// Reads a checkpoint written by save_checkpoint (or by anyone with the same names and metadata).
Params load_checkpoint(const std::filesystem::path& path);

}  // namespace headwise::train
