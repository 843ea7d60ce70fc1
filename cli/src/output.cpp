#include "output.hpp"

#include <algorithm>
#include <iomanip>
#include <iostream>

namespace clampai::cli {

using nlohmann::json;

json named_values_json(const std::vector<std::pair<std::string, kernel::Value>>& values) {
  json o = json::object();
  for (const auto& [k, v] : values) o[k] = v.to_string();
  return o;
}

void print_counterexample(const verifier::Counterexample& cex) {
  std::size_t width = 8;
  for (const auto& [name, _] : cex.pre) width = std::max(width, name.size());
  std::cout << "    " << std::left << std::setw(static_cast<int>(width)) << "variable"
            << "  " << (cex.post.empty() ? "value\n" : "before            after\n");
  for (std::size_t i = 0; i < cex.pre.size(); ++i) {
    if (cex.post.empty()) {  // a state, not a transition (base case)
      std::cout << "    " << std::setw(static_cast<int>(width)) << cex.pre[i].first << "  "
                << cex.pre[i].second.to_string() << "\n";
      continue;
    }
    const std::string after = cex.post[i].second.to_string();
    std::cout << "    " << std::setw(static_cast<int>(width)) << cex.pre[i].first << "  "
              << std::setw(16) << cex.pre[i].second.to_string() << "  " << after
              << (after != cex.pre[i].second.to_string() ? "   (changed)" : "") << "\n";
  }
  if (!cex.params.empty()) {
    std::cout << "    with";
    for (const auto& [name, v] : cex.params) std::cout << " " << name << " = " << v.to_string();
    std::cout << "\n";
  }
  std::cout << std::right;
}

}  // namespace clampai::cli
