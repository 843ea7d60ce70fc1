// The exceptions the library throws; every one of them means misuse by the caller.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace clampai {

/// Base of every exception the library throws; it always means caller misuse.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A documented precondition was violated; the callee's state is unchanged.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// One problem found in a spec.
struct SpecProblem {
  std::string path;          // JSON path (and expression position), or `line:column`; may be ""
  std::string message;       // what is wrong, without the path
  std::uint32_t line = 0;    // where the element starts in the file (1-based); 0 if not known
  std::uint32_t column = 0;  // likewise
};

/// A task spec (JSON or built through the C++ API) is malformed or ill-typed.
/// The message starts with the location: a JSON path such as `actions[2].requires`,
/// and inside an expression `:line:column`. Nothing was built. A spec loaded from JSON text may
/// report several problems at once (`problems()`, at most 20); the message is the first one's,
/// followed by how many more there are.
class SpecError : public Error {
 public:
  SpecError(std::string path, const std::string& message)
      : Error(path.empty() ? message : path + ": " + message),
        problems_{SpecProblem{std::move(path), message}} {}
  /// Requires `problems` to be non-empty.
  explicit SpecError(std::vector<SpecProblem> problems)
      : Error(text(problems)), problems_(std::move(problems)) {}

  /// The JSON path (and expression position) of the (first) offending element; may be empty.
  [[nodiscard]] const std::string& path() const noexcept { return problems_.front().path; }
  /// Every problem found, the first one first.
  [[nodiscard]] const std::vector<SpecProblem>& problems() const noexcept { return problems_; }

 private:
  static std::string text(const std::vector<SpecProblem>& ps) {
    const SpecProblem& p = ps.front();
    std::string out = p.path.empty() ? p.message : p.path + ": " + p.message;
    if (ps.size() > 1) {
      out += " (and " + std::to_string(ps.size() - 1) + " more problem" +
             (ps.size() > 2 ? "s" : "") + ")";
    }
    return out;
  }

  std::vector<SpecProblem> problems_;
};

/// An input file could not be read: it is missing or unreadable, not a regular file, or larger
/// than the input limit. The message names the file and what is wrong with it.
class FileError : public Error {
 public:
  using Error::Error;
};

/// A persisted trace could not be read (I/O failure or not a trace at all).
class TraceError : public Error {
 public:
  using Error::Error;
};

}  // namespace clampai
