// JSON-RPC 2.0 over stdio as the MCP front ends speak it (`clampai mcp`, `clampai gateway`):
// the line reader, the envelope's checks, the replies. One of each, shared by both.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "clampai/kernel/json.hpp"

namespace clampai::server::jsonrpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

/// A JSON-RPC error to answer: its code and message.
struct RpcError {
  int code;
  std::string message;
};

/// A JSON-RPC id: absent, a string, an integer or null.
bool valid_id(const kernel::jsonio::JsonNode* id);
/// The id as JSON text (`null` when absent).
std::string id_json(const kernel::jsonio::JsonNode* id);

/// `{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE}}`; `id` is JSON text.
std::string error_message(const std::string& id, int code, std::string_view message);
/// `{"jsonrpc":"2.0","id":ID,"result":RESULT}`; both are JSON text.
std::string result_message(const std::string& id, std::string_view result);
/// An MCP tool result: `text` for the model, `structured` (JSON text) as structuredContent.
std::string tool_result(std::string_view text, std::string_view structured, bool is_error);

/// The `protocolVersion` of `object` (an initialize request's params or result) when it is one
/// of `mcp_protocol_versions`, else `fallback`.
std::string_view protocol_version(const kernel::jsonio::JsonNode* object,
                                  std::string_view fallback);

/// Appends `n` as JSON text, numbers as their source text, members in their order.
void append_json(std::string& out, const kernel::jsonio::JsonNode& n);

/// One message read off the wire and checked as a JSON-RPC 2.0 envelope.
struct Envelope {
  kernel::jsonio::JsonNode message;
  std::string id = "null";                           // JSON text
  const kernel::jsonio::JsonNode* method = nullptr;  // a string; null for a reply
  const kernel::jsonio::JsonNode* params = nullptr;
  bool notification = false;  // a request without `id`
  bool reply = false;         // a response (`result` or `error`, no `method`)
};

/// Parses `text` (within `limits`) as one JSON-RPC message. Returns the envelope, or sets
/// `refusal` to the error reply the sender gets (-32700 parse error, -32600 invalid request:
/// a batch, no `jsonrpc` 2.0, a bad id, a non-string method).
std::optional<Envelope> read_envelope(std::string_view text,
                                      const kernel::jsonio::JsonLimits& limits,
                                      std::string& refusal);

/// Reads a byte stream a line at a time in blocks, keeping at most `limit` bytes of a line: a
/// longer line is read to its end and dropped as it comes, never held whole.
class LineReader {
 public:
  enum class Got : std::uint8_t { line, too_long, end, timeout };
  /// Fills `buffer` (of `capacity` bytes) with what the source has: the bytes read (> 0), 0
  /// at its end, -1 when it timed out.
  using Source = std::function<std::ptrdiff_t(char* buffer, std::size_t capacity)>;

  LineReader(Source source, std::size_t limit) : source_(std::move(source)), limit_(limit) {}
  /// Over a stream: what it has at hand, or at least one byte (waiting for it).
  LineReader(std::istream& in, std::size_t limit);

  /// The next line, without its `\n` (the last line may lack one). After `timeout`, the part
  /// of a line read so far is kept for the next call.
  Got next(std::string& line);
  /// Whether bytes read from the source wait in the reader (a line `next` returns at once).
  [[nodiscard]] bool buffered() const { return at_ < end_; }

 private:
  Source source_;
  std::size_t limit_;
  std::array<char, 64 * 1024> block_{};
  std::size_t at_ = 0;
  std::size_t end_ = 0;
  bool any_ = false;
  bool too_long_ = false;
  std::string partial_;
};

}  // namespace clampai::server::jsonrpc
