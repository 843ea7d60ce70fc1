// The types of state variables, parameters and expressions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace clampai::kernel {

/// A type of the model. Values of `decimal` types carry a fixed scale; `enumeration` types a
/// declared set of strings; `list` types an element type.
class Type {
 public:
  enum class Kind : std::uint8_t { boolean, integer, decimal, string, enumeration, list };

  static Type boolean() { return Type(Kind::boolean); }
  static Type integer() { return Type(Kind::integer); }
  /// A fixed-point decimal with `scale` digits after the point.
  /// @throws InvalidArgument unless 0 <= scale <= max_scale.
  static Type decimal(int scale);
  static Type string() { return Type(Kind::string); }
  /// An enumeration of the given values. @throws InvalidArgument if empty or with duplicates.
  static Type enumeration(std::vector<std::string> values);
  /// A list of `element` (a scalar type). @throws InvalidArgument if `element` is a list.
  static Type list(const Type& element);
  /// The type of `[]`: a list whose element type is not known yet; fits every list type.
  static Type empty_list();

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] bool is_numeric() const noexcept {
    return kind_ == Kind::integer || kind_ == Kind::decimal;
  }
  [[nodiscard]] bool is_textual() const noexcept {
    return kind_ == Kind::string || kind_ == Kind::enumeration;
  }
  /// Digits after the point: 0 for integers.
  [[nodiscard]] int scale() const noexcept { return scale_; }
  /// The declared values of an enumeration (empty otherwise).
  [[nodiscard]] const std::vector<std::string>& enum_values() const noexcept;
  /// True iff `v` is one of the declared values of this enumeration.
  [[nodiscard]] bool has_enum_value(const std::string& v) const;
  /// The element type of a list; null for `[]` and for non-lists.
  [[nodiscard]] const Type* element() const noexcept { return element_.get(); }

  /// True iff a value of type `from` may be stored where this type is expected: same kind
  /// (an integer fits a decimal), a scale no finer than this one, enumerations with values
  /// that are all declared here (a string literal is checked by the type checker), lists of
  /// fitting elements.
  [[nodiscard]] bool accepts(const Type& from) const;

  /// True iff values of the two types can be compared with `==`.
  [[nodiscard]] bool comparable_with(const Type& other) const;

  /// The spelling used in messages and the JSON spec: `int`, `decimal(2)`, `list<string>`...
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const Type& a, const Type& b);

 private:
  explicit Type(Kind k) : kind_(k) {}

  Kind kind_;
  std::uint8_t scale_ = 0;
  std::shared_ptr<const std::vector<std::string>> enum_values_;
  std::shared_ptr<const Type> element_;
};

}  // namespace clampai::kernel
