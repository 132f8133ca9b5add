// Choice options: an enum whose words are listed once, in ChoiceNames<E>::names, in the enum's
// order (config/options.h specialises it for each). lib/config reads a value with parse_choice
// (case-insensitive), names the words in its errors and writes config.yaml with to_string; code
// outside lib/config compares enum values, never the words.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/strings.h"

namespace dlt {

template <class E>
struct ChoiceNames;  // static constexpr std::array<std::string_view, N> names

template <class E>
concept ChoiceEnum = requires { ChoiceNames<E>::names; };

// The word for e ("every-epoch" for Shuffle::kEveryEpoch).
template <ChoiceEnum E>
std::string to_string(E e) {
  return std::string(ChoiceNames<E>::names.at(static_cast<size_t>(e)));
}

// Every word of E, in the enum's order (for messages, --help and docs).
template <ChoiceEnum E>
std::vector<std::string> choice_names() {
  std::vector<std::string> out;
  for (std::string_view n : ChoiceNames<E>::names) out.emplace_back(n);
  return out;
}

// Reads a word, in any case; false (out untouched) when it is none of E's.
template <ChoiceEnum E>
bool parse_choice(const std::string& text, E* out) {
  const auto& names = ChoiceNames<E>::names;
  for (size_t i = 0; i < names.size(); ++i)
    if (iequals(std::string(names[i]), text)) {
      *out = static_cast<E>(i);
      return true;
    }
  return false;
}

}  // namespace dlt
