// Value rendering and equality.
#include "clampai/kernel/value.hpp"

namespace clampai::kernel {

std::string Value::to_string() const {
  switch (kind()) {
    case Kind::undefined:
      return "undefined";
    case Kind::boolean:
      return as_bool() ? "true" : "false";
    case Kind::number:
      return as_number().to_string();
    case Kind::string:
      return "'" + as_string() + "'";
    case Kind::list: {
      std::string s = "[";
      const auto& items = as_list();
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) s += ", ";
        s += items[i].to_string();
      }
      return s + "]";
    }
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) noexcept {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::undefined:
      return true;
    case Value::Kind::boolean:
      return a.as_bool() == b.as_bool();
    case Value::Kind::number:
      return a.as_number() == b.as_number();
    case Value::Kind::string:
      return a.as_string() == b.as_string();
    case Value::Kind::list:
      return &a.as_list() == &b.as_list() || a.as_list() == b.as_list();
  }
  return false;
}

}  // namespace clampai::kernel
