// Immutable values held by state variables and computed by expressions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "clampai/kernel/number.hpp"

namespace clampai::kernel {

/// An immutable value: undefined (a deleted optional variable), a boolean, an exact number, a
/// string (also the values of enumerations) or a list. Copies are cheap: strings and lists are
/// shared.
class Value {
 public:
  enum class Kind : std::uint8_t { undefined, boolean, number, string, list };
  using List = std::vector<Value>;

  /// The undefined value.
  Value() = default;
  // Built in place (no temporary variant to move from): these are on the kernel's hot path.
  static Value boolean(bool b) {
    Value v;
    v.repr_.emplace<bool>(b);
    return v;
  }
  static Value number(Decimal d) {
    Value v;
    v.repr_.emplace<Decimal>(d);
    return v;
  }
  static Value integer(std::int64_t i) { return number(Decimal::integer(i)); }
  static Value string(std::string s) {
    return Value(Repr(std::make_shared<const std::string>(std::move(s))));
  }
  static Value list(List items) {
    return Value(Repr(std::make_shared<const List>(std::move(items))));
  }

  [[nodiscard]] Kind kind() const noexcept { return static_cast<Kind>(repr_.index()); }
  [[nodiscard]] bool is_defined() const noexcept { return kind() != Kind::undefined; }

  /// Requires `kind() == Kind::boolean`.
  [[nodiscard]] bool as_bool() const { return std::get<bool>(repr_); }
  /// Requires `kind() == Kind::number`.
  [[nodiscard]] const Decimal& as_number() const { return std::get<Decimal>(repr_); }
  /// Requires `kind() == Kind::string`.
  [[nodiscard]] const std::string& as_string() const { return *std::get<StringPtr>(repr_); }
  /// Requires `kind() == Kind::list`.
  [[nodiscard]] const List& as_list() const { return *std::get<ListPtr>(repr_); }

  /// A short human-readable rendering: `true`, `12.50`, `'ok'`, `[1, 2]`, `undefined`.
  [[nodiscard]] std::string to_string() const;

  /// Structural equality; numbers compare by value whatever their scale.
  friend bool operator==(const Value& a, const Value& b) noexcept;

 private:
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const List>;
  using Repr = std::variant<std::monostate, bool, Decimal, StringPtr, ListPtr>;
  explicit Value(Repr r) : repr_(std::move(r)) {}

  Repr repr_;
};

}  // namespace clampai::kernel
