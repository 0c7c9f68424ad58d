// headwise/base/names.hpp -- an enum's names as one table: its to_string and the parsing of a
// name read the same rows, so the two cannot disagree.
//
//   constexpr Named<Isa> isa_names[] = {{Isa::scalar, "scalar"}, {Isa::avx2, "avx2"}};
//   name_in(isa_names, Isa::avx2)     -> "avx2"
//   value_named(isa_names, "avx2")    -> Isa::avx2 (nullopt for a name not in the table)
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace headwise {

template <class E>
struct Named {
    E value;
    std::string_view name;
};

// The name of `value` in `table`; "?" for a value the table lacks (a cast from a bad integer).
template <class E, std::size_t N>
constexpr std::string_view name_in(const Named<E> (&table)[N], E value) {
    for (const Named<E>& row : table)
        if (row.value == value) return row.name;
    return "?";
}

// The value named `name` in `table`, or nullopt.
template <class E, std::size_t N>
constexpr std::optional<E> value_named(const Named<E> (&table)[N], std::string_view name) {
    for (const Named<E>& row : table)
        if (row.name == name) return row.value;
    return std::nullopt;
}

}  // namespace headwise
