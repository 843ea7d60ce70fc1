// Immutable values held by state variables and computed by expressions.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <variant>  // std::bad_variant_access, what a misused accessor throws
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
  Value() noexcept : number_{} {}
  // A tagged union rather than a std::variant: copying, moving and destroying a boolean or a
  // number (nearly every value the kernel handles) is a plain copy, with no call through a
  // dispatch table; only strings and lists count references.
  Value(const Value& o) noexcept : kind_(o.kind_) { copy_from(o); }
  Value(Value&& o) noexcept : kind_(o.kind_) { move_from(o); }
  Value& operator=(const Value& o) noexcept {
    if (this != &o) {
      if (kind_ < Kind::string && o.kind_ < Kind::string) {
        copy_payload(o);  // the whole payload of undefined, a boolean and a number
        kind_ = o.kind_;
      } else {
        Value copy(o);
        reset();
        kind_ = copy.kind_;
        move_from(copy);
      }
    }
    return *this;
  }
  [[gnu::always_inline]] Value& operator=(Value&& o) noexcept {
    if (kind_ < Kind::string && o.kind_ < Kind::string) [[likely]] {
      // Numbers, booleans, undefined: the payload, inline (`o` left undefined, as any move).
      copy_payload(o);
      kind_ = o.kind_;
      if (this != &o) o.kind_ = Kind::undefined;
      return *this;
    }
    return move_assign_shared(o);
  }
  ~Value() { reset(); }

  // Built in place: these are on the kernel's hot path.
  static Value boolean(bool b) noexcept {
    Value v;
    v.kind_ = Kind::boolean;
    v.number_.units = b ? 1 : 0;
    return v;
  }
  static Value number(Decimal d) noexcept {
    Value v;
    v.kind_ = Kind::number;
    v.number_.units = d.units;
    v.number_.scale = d.scale;
    return v;
  }
  static Value integer(std::int64_t i) noexcept { return number(Decimal::integer(i)); }
  static Value string(std::string s) {
    Value v;
    new (&v.string_) StringPtr(std::make_shared<const std::string>(std::move(s)));
    v.kind_ = Kind::string;
    return v;
  }
  static Value list(List items) {
    Value v;
    new (&v.list_) ListPtr(std::make_shared<const List>(std::move(items)));
    v.kind_ = Kind::list;
    return v;
  }

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] bool is_defined() const noexcept { return kind_ != Kind::undefined; }

  /// Requires `kind() == Kind::boolean`.
  [[nodiscard]] bool as_bool() const {
    check(Kind::boolean);
    return number_.units != 0;
  }
  /// Requires `kind() == Kind::number`.
  [[nodiscard]] const Decimal& as_number() const {
    check(Kind::number);
    return number_;
  }
  /// Requires `kind() == Kind::string`.
  [[nodiscard]] const std::string& as_string() const {
    check(Kind::string);
    return *string_;
  }
  /// Requires `kind() == Kind::list`.
  [[nodiscard]] const List& as_list() const {
    check(Kind::list);
    return *list_;
  }

  /// A short human-readable rendering: `true`, `12.50`, `'ok'`, `[1, 2]`, `undefined`.
  [[nodiscard]] std::string to_string() const;

  /// Structural equality; numbers compare by value whatever their scale.
  friend bool operator==(const Value& a, const Value& b) noexcept;

 private:
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const List>;

  // As std::get on the wrong alternative did: a misuse throws std::bad_variant_access.
  void check(Kind k) const {
    if (kind_ != k) [[unlikely]]
      throw std::bad_variant_access();
  }
  // Requires the payload to hold nothing (after construction or reset()). Numbers and booleans
  // inline; strings and lists out of line (so that the common path stays small enough to
  // inline everywhere).
  void copy_from(const Value& o) noexcept {
    if (o.kind_ < Kind::string) [[likely]] {
      copy_payload(o);
    } else {
      copy_shared(o);
    }
  }
  // The same, leaving `o` undefined.
  void move_from(Value& o) noexcept {
    if (o.kind_ < Kind::string) [[likely]] {
      copy_payload(o);
    } else {
      move_shared(o);
    }
    o.kind_ = Kind::undefined;
  }
  // Field by field, as numbers are built: a copy of the whole 16 bytes would read the padding
  // after `scale`, which a one-byte store just before cannot forward (a stall of the CPU).
  void copy_payload(const Value& o) noexcept {
    number_.units = o.number_.units;
    number_.scale = o.number_.scale;
  }
  void reset() noexcept {
    if (kind_ >= Kind::string) [[unlikely]]
      reset_shared();
    kind_ = Kind::undefined;
  }
  [[gnu::noinline]] void copy_shared(const Value& o) noexcept {
    if (o.kind_ == Kind::string) {
      new (&string_) StringPtr(o.string_);
    } else {
      new (&list_) ListPtr(o.list_);
    }
  }
  [[gnu::noinline]] void move_shared(Value& o) noexcept {
    if (o.kind_ == Kind::string) {
      new (&string_) StringPtr(std::move(o.string_));
      o.string_.~StringPtr();
    } else {
      new (&list_) ListPtr(std::move(o.list_));
      o.list_.~ListPtr();
    }
    new (&o.number_) Decimal();
  }
  // A move assignment where either side is a string or a list.
  [[gnu::noinline]] Value& move_assign_shared(Value& o) noexcept {
    if (this != &o) {
      reset();
      kind_ = o.kind_;
      move_from(o);
    }
    return *this;
  }
  [[gnu::noinline]] void reset_shared() noexcept {
    if (kind_ == Kind::string) {
      string_.~StringPtr();
    } else {
      list_.~ListPtr();
    }
    new (&number_) Decimal();
  }

  union {
    Decimal number_;  // also a boolean's payload (units 0 or 1) and undefined's (zero)
    StringPtr string_;
    ListPtr list_;
  };
  Kind kind_ = Kind::undefined;
};

}  // namespace clampai::kernel
