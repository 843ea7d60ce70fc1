// Pattern invariants on RE2: compiled once at load time, shared by every evaluation.
#include "clampai/hardening/patterns.hpp"

#include <re2/re2.h>

#include <memory>

#include "clampai/kernel/error.hpp"

namespace clampai::hardening {

kernel::NativePredicate compile_patterns(const std::vector<kernel::VarId>& variables,
                                         const std::vector<std::string>& patterns,
                                         const std::string& path) {
  auto compiled = std::make_shared<std::vector<std::unique_ptr<const RE2>>>();
  RE2::Options options;
  options.set_log_errors(false);
  for (std::size_t k = 0; k < patterns.size(); ++k) {
    auto re = std::make_unique<const RE2>(patterns[k], options);
    if (!re->ok())
      throw SpecError(path + "[" + std::to_string(k) + "]",
                      "invalid regular expression `" + patterns[k] + "`: " + re->error());
    compiled->push_back(std::move(re));
  }
  return [variables, compiled](const kernel::State& s) {
    auto clean = [&](const kernel::Value& v) {
      if (v.kind() != kernel::Value::Kind::string) return true;
      for (const auto& re : *compiled)
        if (RE2::PartialMatch(v.as_string(), *re)) return false;
      return true;
    };
    for (kernel::VarId id : variables) {
      const kernel::Value& v = s.get(id);
      if (v.kind() == kernel::Value::Kind::list) {
        for (const kernel::Value& item : v.as_list())
          if (!clean(item)) return false;
      } else if (!clean(v)) {
        return false;
      }
    }
    return true;
  };
}

void install_pattern_engine() { kernel::set_pattern_compiler(compile_patterns); }

}  // namespace clampai::hardening
