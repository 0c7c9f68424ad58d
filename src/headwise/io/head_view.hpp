// headwise/io/head_view.hpp -- attention weights as one interactive, self-contained HTML page.
//
// The page has three views of the same numbers:
//   head view      the tokens in two columns (queries left, keys right) and a line from each query
//                  to each key whose opacity is the weight; one colour per head, heads switched on
//                  and off, a layer selector; hovering a token keeps only its lines and lists the
//                  exact weights in a side table
//   model view     every layer x head as a small heat map, labelled with the head's measured role;
//                  clicking one opens it in the head view
//   ablation view  the same grid coloured by the cosine between the output with that head removed
//                  and the full output
// Everything is inline -- the script, the style and the weights (JSON) -- so the file opens from
// disk with no network: no CDN, no fonts, nothing fetched. The page itself is
// src/headwise/io/head_view.html, compiled into the library at build time.
//
// Nothing here knows what a model is: it takes plain data (tokens, weights, labels, numbers).
#pragma once

#include "headwise/base/tensor.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace headwise::head_view {

struct Data {
    std::string title;                // the page's heading, e.g. the sentence
    std::string subtitle;             // where the weights come from
    std::vector<std::string> tokens;  // N labels, queries = keys
    // A pair of sentences: tokens [0, boundary) are the first (its [SEP] included), the rest the
    // second. 0 = one sentence.
    std::size_t boundary = 0;
    std::vector<Tensor3> weights;  // L x (H, N, N), rows = queries, columns = keys
    // Optional (empty = not shown): L x H labels, e.g. "previous-token"; L x H cosines to the full
    // output when that head is removed, and what that cosine compares.
    std::vector<std::vector<std::string>> roles;
    std::vector<std::vector<double>> ablation;
    std::string ablation_label;
};

// The page, as text. usage_error when the data do not fit together (no layers, a weight tensor
// that is not (H, N, N) with the same H everywhere, N tokens, roles or ablation not L x H, a
// boundary past the end, a weight that is not finite).
std::string render(const Data& data);

// render(), written under a temporary name beside `target` and renamed into place: a failure
// (bad data, a directory that does not exist, a full disk) leaves no file behind. usage_error
// says which.
void write(const std::filesystem::path& target, const Data& data);

// How many digits after the point the weights keep in the page (5: each within 5e-6 of the float).
inline constexpr int weight_digits = 5;

}  // namespace headwise::head_view
