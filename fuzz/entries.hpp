// The fuzzed entry points, shared by the libFuzzer targets (fuzz_<name>.cpp) and the
// regression runner (replay.cpp), which a normal ctest runs on every kept input. Each entry
// takes arbitrary bytes and returns normally for any input: rejecting it with clampai::Error is
// fine; anything else (another exception, a crash, a sanitizer report, a broken invariant of
// the entry checked with `must`) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace clampai::fuzz {

/// A property the entry checks on accepted input, broken.
class Broken : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// The expression parser (against a model with every variable type and a parameterised
/// action); an accepted expression prints back to source that parses to the same text, and
/// evaluates without throwing.
void expression(std::string_view input);
/// The spec loader (parse_spec and build_model); an accepted spec's initial state holds
/// values of its declared types, and the spec loads again from the same text.
void spec(std::string_view input);
/// The trace reader: the JSON Lines parser and the chain verification (read, then verified
/// both from the file and from the entries).
void trace(std::string_view input);
/// The manifest reader: the input as a manifest next to the example specs of examples/compose.
void manifest(std::string_view input);
/// The CLI's `--params` parser.
void params(std::string_view input);
/// `clampai serve`'s routes without sockets (server::Service::handle), on a fresh service
/// serving examples/autoscale.json: the input is requests separated by lines `%%`, each a
/// line `METHOD TARGET [AUTHORIZATION...]` (without AUTHORIZATION: the right bearer token) and
/// the body. Every answer has a status of the API, a JSON body (errors: `error.code` and
/// `error.message`) or a stream that ends; an error leaves the task's state and trace as they
/// were.
void service(std::string_view input);
/// `clampai mcp`'s session (server::McpSession::handle) over examples/autoscale.json: the input
/// is JSON-RPC messages, one a line. Every answer is empty or one JSON-RPC 2.0 response (a
/// result or an error with an integer code, never both).
void mcp(std::string_view input);

/// The gateway's bindings (server/src/bindings.cpp): the input's first line is a binding
/// expression, the rest the call's arguments (JSON). An accepted expression evaluates to a
/// number or refuses the arguments with InvalidArgument; `under` is 0 or 1; and the first line
/// read as a path normalises to a fixed point that lies under itself.
void bindings(std::string_view input);
/// `serve --principals`'s file (server::parse_principals): refused with an error naming where,
/// or read into principals whose tokens are SHA-256 digests and whose rights are known names.
void principals(std::string_view input);
/// A pools file (kernel::load_pools): refused with an error naming where, or read into a tree
/// that lists every parent before its children with nothing spent; charges through the last
/// pool's chain then never overspend a level.
void pools(std::string_view input);

struct Target {
  const char* name;
  void (*run)(std::string_view);
};
/// Every target, by name (the directory names of fuzz/regressions/).
const std::vector<Target>& targets();

/// Runs `run` on the input as libFuzzer gives it.
int run_one(void (*run)(std::string_view), const std::uint8_t* data, std::size_t size);

}  // namespace clampai::fuzz
