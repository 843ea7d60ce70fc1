// Model types and the assignability rules the type checker uses.
#include "clampai/kernel/type.hpp"

#include <algorithm>
#include <set>

#include "clampai/kernel/error.hpp"
#include "clampai/kernel/number.hpp"

namespace clampai::kernel {

Type Type::decimal(int scale) {
  if (scale < 0 || scale > max_scale) {
    throw InvalidArgument("decimal scale must be between 0 and 18, got " + std::to_string(scale));
  }
  Type t(Kind::decimal);
  t.scale_ = static_cast<std::uint8_t>(scale);
  return t;
}

Type Type::enumeration(std::vector<std::string> values) {
  if (values.empty()) throw InvalidArgument("an enumeration needs at least one value");
  std::set<std::string> seen;
  for (const auto& v : values) {
    if (!seen.insert(v).second) throw InvalidArgument("duplicate enumeration value `" + v + "`");
  }
  Type t(Kind::enumeration);
  t.enum_values_ = std::make_shared<const std::vector<std::string>>(std::move(values));
  return t;
}

Type Type::list(const Type& element) {
  if (element.kind() == Kind::list) throw InvalidArgument("lists of lists are not supported");
  Type t(Kind::list);
  t.element_ = std::make_shared<const Type>(element);
  return t;
}

Type Type::empty_list() { return Type(Kind::list); }

const std::vector<std::string>& Type::enum_values() const noexcept {
  static const std::vector<std::string> none;
  return enum_values_ ? *enum_values_ : none;
}

bool Type::has_enum_value(const std::string& v) const {
  const auto& vs = enum_values();
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

bool Type::accepts(const Type& from) const {
  switch (kind_) {
    case Kind::boolean:
    case Kind::string:
      return from.kind_ == kind_;
    case Kind::integer:
      return from.kind_ == Kind::integer;
    case Kind::decimal:
      return from.is_numeric() && from.scale_ <= scale_;
    case Kind::enumeration:
      if (from.kind_ != Kind::enumeration) return false;
      return std::all_of(from.enum_values().begin(),
                         from.enum_values().end(),
                         [&](const std::string& v) { return has_enum_value(v); });
    case Kind::list:
      if (from.kind_ != Kind::list) return false;
      if (from.element_ == nullptr) return true;
      return element_ == nullptr || element_->accepts(*from.element_);
  }
  return false;
}

bool Type::comparable_with(const Type& other) const {
  if (is_numeric() && other.is_numeric()) return true;
  if (is_textual() && other.is_textual()) return true;
  if (kind_ == Kind::list && other.kind_ == Kind::list) {
    if (element_ == nullptr || other.element_ == nullptr) return true;
    return element_->comparable_with(*other.element_);
  }
  return kind_ == other.kind_;
}

std::string Type::to_string() const {
  switch (kind_) {
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::decimal:
      return "decimal(" + std::to_string(scale_) + ")";
    case Kind::string:
      return "string";
    case Kind::enumeration: {
      std::string s = "enum{";
      for (std::size_t i = 0; i < enum_values().size(); ++i) {
        if (i > 0) s += ", ";
        s += enum_values()[i];
      }
      return s + "}";
    }
    case Kind::list:
      return element_ ? "list<" + element_->to_string() + ">" : "list";
  }
  return "?";
}

bool operator==(const Type& a, const Type& b) {
  if (a.kind_ != b.kind_ || a.scale_ != b.scale_) return false;
  if (a.enum_values() != b.enum_values()) return false;
  if ((a.element_ == nullptr) != (b.element_ == nullptr)) return false;
  return a.element_ == nullptr || *a.element_ == *b.element_;
}

}  // namespace clampai::kernel
