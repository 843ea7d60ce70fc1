// The trusted part of the verifier: the Z3 encoding of the kernel's expressions and effects.
// Keep it small; tests/verifier/internal/ test it white-box against the kernel's evaluator.
#pragma once

#include <z3++.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clampai/kernel/model.hpp"

namespace clampai::verifier::detail {

/// The Int codes of enumeration values: one code per distinct string, whatever enumeration
/// declares it, so equal values are equal terms across enumeration types (a value copied from
/// an enumeration to its subset or permutation keeps its meaning). Shared by every encoder of
/// one Z3 context that relates their terms.
class EnumCodes {
 public:
  /// The code of `value` (assigned on first use).
  std::int64_t of(const std::string& value);
  /// The value of `code`. @throws std::out_of_range for a code never assigned.
  [[nodiscard]] const std::string& value(std::int64_t code) const;

 private:
  std::map<std::string, std::int64_t> codes_;
  std::vector<std::string> values_;
};

/// A numeric term is an integer count of 10^-scale units, exactly as the kernel stores it;
/// booleans are Bool, enumeration values the Int code of their string (EnumCodes), strings
/// String. A list is a Z3 sequence of its elements' terms; for a list of numbers, `scale` is
/// the scale of every element's units (the kernel compares numbers by value, so one scale per
/// list term loses nothing).
struct Term {
  z3::expr e;
  int scale = 0;
};

/// Raised inside the encoder for constructs it does not translate; the obligation becomes
/// `unknown` with this reason.
struct Unsupported {
  std::string reason;
};

/// Encodes expressions of one model over symbolic pre-state, post-state and parameters.
class Encoder {
 public:
  /// `prefix` names this encoder's symbols, so that several states (the steps of a bounded
  /// model check) can live in one solver.
  /// `codes` (default: a new table) must be shared by encoders whose terms meet in one solver.
  Encoder(z3::context& ctx,
          const kernel::TaskModel& model,
          std::string prefix = "",
          std::shared_ptr<EnumCodes> codes = nullptr);

  /// The enumeration codes this encoder uses (to share with another encoder).
  [[nodiscard]] const std::shared_ptr<EnumCodes>& codes() const noexcept { return codes_; }

  /// The pre-state symbol of variable `id` (created on first use).
  z3::expr pre(kernel::VarId id);
  /// The parameter symbol of parameter `i` of `action`.
  z3::expr param(const kernel::Action& action, std::size_t i);

  /// Range constraints of variable `id`'s symbol: declared bounds, int64 range, enum values.
  z3::expr bounds(kernel::VarId id, const z3::expr& symbol);
  /// What the kernel checks of a written value (`bound_violated`): declared min/max of a
  /// number, max_length of a list; true for other types.
  z3::expr declared_bounds(kernel::VarId id, const z3::expr& value);
  /// Range constraints of a parameter symbol.
  z3::expr param_bounds(const kernel::Parameter& p, const z3::expr& symbol);

  /// The value `effect` of `action` writes, read on the pre-state; `computed` becomes the
  /// condition that the kernel computes it without an overflow. @throws Unsupported
  z3::expr effect(const kernel::Action& action, const kernel::Effect& effect, z3::expr& computed);

  /// Encodes a bool expression. `post` maps written variables to their post terms (null: the
  /// expression is read on the pre-state); `old(x)` always reads the pre-state.
  /// @throws Unsupported
  z3::expr encode_bool(const kernel::Expr& e,
                       const std::vector<std::pair<kernel::VarId, z3::expr>>* post,
                       const kernel::Action* action);

  /// Encodes any expression on the pre-state (no parameters). @throws Unsupported
  Term encode_term(const kernel::Expr& e);
  /// Encodes a numeric expression, read like `encode_bool`. @throws Unsupported
  Term encode_numeric(const kernel::Expr& e,
                      const std::vector<std::pair<kernel::VarId, z3::expr>>* post,
                      const kernel::Action* action);

  /// The cost of `action` in budget units (the model's budget scale), as the kernel charges it:
  /// the constant cost, or the cost expression over the action's parameters. A cost finer than
  /// the budget's scale, or one out of the int64 range, is rejected by the kernel (as an
  /// overflow): `side` gets the condition that it is not (with the range conditions of the
  /// cost expression). @throws Unsupported
  z3::expr cost_units(const kernel::Action& action, z3::expr& side);

  /// The term of a concrete value of `type`, as `pre` symbols of that type hold it: the
  /// inverse of `value_of`. @throws Unsupported for values of a type without a sort.
  z3::expr constant(const kernel::Value& v, const kernel::Type& type);

  /// The conjunction of "stays within int64" for every arithmetic result computed by the
  /// encodings since the last call (the kernel fails on such an overflow), then forgets them.
  z3::expr take_ranges();

  /// True iff the last encodings multiplied two non-constant terms.
  [[nodiscard]] bool nonlinear() const noexcept { return nonlinear_; }
  void reset_nonlinear() noexcept { nonlinear_ = false; }

  /// The concrete value of `symbol` (of variable `id`'s type) in `model`.
  kernel::Value value_of(const z3::model& model, const z3::expr& symbol, const kernel::Type& type);

  z3::context& ctx() { return ctx_; }
  [[nodiscard]] const kernel::TaskModel& model() const noexcept { return model_; }
  [[nodiscard]] const std::string& prefix() const noexcept { return prefix_; }

 private:
  struct Env {
    const std::vector<std::pair<kernel::VarId, z3::expr>>* post;
    const kernel::Action* action;
  };
  // `codes`: string literals stand for enumeration values (their EnumCodes code).
  Term encode(const kernel::Expr& e, const Env& env, bool codes);
  // The one conversion of a value to the type of what receives it (the kernel's `normalise`
  // on a write, and the common type of a comparison): `e` as a value of type `to`, a number at
  // `to`'s scale, each element of a list at its element type's scale (a list literal and the
  // branches of an `if` item by item; any other list through `rescaled_items`), string
  // literals as enumeration codes where `to` holds enumeration values (or `codes`). `fits`,
  // when given, is conjoined with the condition that every converted number stays within int64
  // (the kernel's overflow on writing it). Every effect, list literal, list `if` and list
  // comparison goes through it. @throws Unsupported for a value finer than `to` or of another
  // sort.
  z3::expr convert(
      const kernel::Expr& e, const Env& env, const kernel::Type& to, bool codes, z3::expr* fits);
  z3::expr align(const Term& t, int scale);
  z3::sort sort_of(const kernel::Type& t);
  // The sort of a `to` value, strings as enumeration codes where `codes`.
  z3::sort sort_as(const kernel::Type& t, bool codes);
  z3::expr empty_list(const z3::sort& list_sort);
  // Z3 4.8 has no seq.map: functions over sequences of Int defined by recursion on the first
  // element, once per encoder, named uniquely in the process (Z3 merges recursive functions of
  // one name). `rescaled_items(s, k)`: every element times 10^k. `all_items(s, key, test)`:
  // `test` holds of every element (`key` names the test).
  z3::expr rescaled_items(const z3::expr& s, int k);
  z3::expr all_items(const z3::expr& s,
                     const std::string& key,
                     const std::function<z3::expr(const z3::expr&)>& test);
  std::map<std::string, z3::func_decl> recfuns_;

  z3::context& ctx_;
  const kernel::TaskModel& model_;
  std::string prefix_;
  std::shared_ptr<EnumCodes> codes_;
  std::vector<std::optional<z3::expr>> pre_;
  bool nonlinear_ = false;
  std::vector<z3::expr> ranges_;  // int64 range of every arithmetic result
  Term ranged(Term t);
  // The range conditions added since `mark` hold only where `taken` does (a lazily evaluated
  // operand).
  void only_if(std::size_t mark, const z3::expr& taken);
};

}  // namespace clampai::verifier::detail
