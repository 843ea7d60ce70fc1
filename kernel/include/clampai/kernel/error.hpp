// The exceptions the library throws; every one of them means misuse by the caller.
#pragma once

#include <stdexcept>
#include <string>

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

/// A task spec (JSON or built through the C++ API) is malformed or ill-typed.
/// The message starts with the location: a JSON path such as `actions[2].requires`,
/// and inside an expression `:line:column`. Nothing was built.
class SpecError : public Error {
 public:
  SpecError(std::string path, const std::string& message)
      : Error(path.empty() ? message : path + ": " + message), path_(std::move(path)) {}

  /// The JSON path (and expression position) of the offending element; may be empty.
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
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
