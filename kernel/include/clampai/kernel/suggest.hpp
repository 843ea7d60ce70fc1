// Did-you-mean suggestions for unknown names: one edit-distance rule for every message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clampai::kernel {

/// The Levenshtein distance between `a` and `b` (insertions, deletions, substitutions).
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word`: within 2 edits and fewer edits than `word` has characters
/// (the first such candidate on a tie), or "" if none is that close.
[[nodiscard]] std::string closest_match(std::string_view word,
                                        const std::vector<std::string>& candidates);

/// ` (did you mean `x`?)` for the closest match, or "" if there is none.
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       const std::vector<std::string>& candidates);

/// A name other languages use for one of the candidates (`integer` for `int`) and that name.
using Alias = std::pair<std::string_view, std::string_view>;

/// As above, but a `word` listed in `aliases` (exactly, ignoring case) suggests its candidate,
/// however far apart they are spelt.
[[nodiscard]] std::string did_you_mean(std::string_view word,
                                       const std::vector<std::string>& candidates,
                                       const std::vector<Alias>& aliases);

}  // namespace clampai::kernel
