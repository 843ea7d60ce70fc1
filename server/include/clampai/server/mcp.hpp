// `clampai mcp SPEC`: a Model Context Protocol server (JSON-RPC 2.0 over stdio) whose tools are
// a task's actions, each call decided by the kernel (docs/SERVE.md, "MCP").
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace clampai::kernel {
class TaskModel;
}

namespace clampai::server {

/// The MCP protocol revisions this server speaks, newest first; it answers `initialize` with
/// the client's revision when it is one of them, else the newest.
inline constexpr std::string_view mcp_protocol_versions[] = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/// One MCP session over one task: a kernel of its own, one message at a time.
class McpSession {
 public:
  /// Requires `model`. With `shadow` (`clampai mcp --shadow`; docs/SERVE.md, "Shadow mode"),
  /// each action tool's call is followed whatever the kernel decides, nothing waits for an
  /// approval, and its result carries `"enforced": false` and `"shadow"` (the would-be
  /// decision).
  /// @throws InvalidArgument if an action's id is also the name of a built-in tool (`status`,
  /// `lookahead`, `repair`), naming it; with `shadow`, if the task's budget is in a pool.
  explicit McpSession(std::shared_ptr<const kernel::TaskModel> model, bool shadow = false);
  ~McpSession();
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  /// Answers one JSON-RPC message (a line of stdio): the response's JSON text, or an empty
  /// string for a notification (or a response from the client). A malformed message gets a
  /// JSON-RPC error (-32700 parse error, -32600 invalid request); an unknown method -32601;
  /// an unknown tool or arguments of the wrong type -32602. Never throws.
  std::string handle(std::string_view message) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Serves one session: reads newline-delimited JSON-RPC messages from `in` until it ends and
/// writes each response on its own line to `out`, flushed (`shadow`: as McpSession's). Returns 0.
int serve_mcp(std::shared_ptr<const kernel::TaskModel> model,
              std::istream& in,
              std::ostream& out,
              bool shadow = false);

}  // namespace clampai::server
