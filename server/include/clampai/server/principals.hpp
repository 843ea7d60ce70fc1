// Who may call `clampai serve` and what each may do (docs/SERVE.md, "Principals and rights"):
// each principal is a name, the SHA-256 of its bearer token and its rights per task.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clampai::server {

/// A right, as a bit of a `Rights` mask.
enum class Right : std::uint8_t {
  read = 1,     ///< state, trace, metrics, the task list
  decide = 2,   ///< evaluate, lookahead, repair, verify
  execute = 4,  ///< execute
  approve = 8,  ///< approve another principal's request
  admin = 16,   ///< rollback, add (or reload) tasks
};
using Rights = std::uint8_t;
inline constexpr Rights kAllRights = 31;

/// The name of a right (`read`, `decide`...).
[[nodiscard]] std::string_view right_name(Right r);
/// The right named `name`, or none.
[[nodiscard]] std::optional<Right> right_named(std::string_view name);

/// One principal: its rights on each task name, `*` for every task.
struct Principal {
  std::string name{};
  std::string token_sha256{};  // 64 lowercase hex digits
  std::map<std::string, Rights, std::less<>> rights{};

  /// Its rights on `task`: the union of those on `task` and on `*`.
  [[nodiscard]] Rights on(std::string_view task) const;
  /// True iff it holds `r` on `task` (on `*` when `task` is empty: the whole server).
  [[nodiscard]] bool may(Right r, std::string_view task) const;
  /// True iff it holds `r` on some task or on `*`.
  [[nodiscard]] bool may_somewhere(Right r) const;
};

/// Reads a principals file: `{"principals": [{"name": N, "token_sha256": HEX, "rights":
/// {TASK: [RIGHT...]}}]}`.
/// @throws InvalidArgument naming `origin` and the offending entry and key, e.g.
/// `principals[1].rights.deploy[0]: unknown right `exec` (did you mean `execute`?)`.
[[nodiscard]] std::vector<Principal> parse_principals(std::string_view text,
                                                      const std::string& origin);

/// The one principal a bearer token stands for under `--token-file`: every right on `*`.
[[nodiscard]] Principal token_principal(std::string_view token);

}  // namespace clampai::server
