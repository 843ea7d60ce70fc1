// Reading input files safely: opened once, checked to be regular files, read within a limit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace clampai::kernel {

/// The default of `max_input_bytes()`: 64 MiB.
inline constexpr std::size_t default_max_input_bytes = std::size_t{64} << 20;

/// The largest input file the toolkit reads, in bytes: the value given to
/// `set_max_input_bytes`, else the environment variable `CLAMPAI_MAX_INPUT_BYTES` (a positive
/// whole number, optionally with a K, M or G suffix for KiB, MiB, GiB), else
/// `default_max_input_bytes`. Thread-safe.
/// @throws InvalidArgument if `CLAMPAI_MAX_INPUT_BYTES` is set but not such a number.
[[nodiscard]] std::size_t max_input_bytes();

/// Sets the process-wide limit of `max_input_bytes()`. Requires `bytes > 0`.
/// @throws InvalidArgument if `bytes` is 0.
void set_max_input_bytes(std::size_t bytes);

/// Parses a byte count: a positive whole number, optionally followed by K, M or G (KiB, MiB,
/// GiB). @throws InvalidArgument naming `what` if it is not one, or overflows.
[[nodiscard]] std::size_t parse_byte_count(const std::string& text, const std::string& what);

/// Reads the whole of an input file. The file is opened once (without blocking, so a FIFO
/// cannot hang the caller), checked with fstat to be a regular file, and read up to `limit`
/// bytes. `-` reads standard input (which may be a pipe) when `allow_stdin`.
/// @throws FileError naming the file and what it is when it is missing or unreadable (with the
/// OS's reason), not a regular file (a directory, a FIFO, a character or block device, a socket,
/// or a symbolic link to one), or larger than `limit` bytes.
[[nodiscard]] std::string read_file(const std::string& path,
                                    std::size_t limit,
                                    bool allow_stdin = false);
/// The same with the limit `max_input_bytes()`.
[[nodiscard]] std::string read_file(const std::string& path);

/// An input file opened once and read at offsets, in pieces the caller chooses (large inputs
/// read once, such as trace files, on several threads without a buffer of the whole file): a
/// regular file within a limit, with the checks and errors of `read_file` (no standard input).
/// The bytes are copied out with pread, so a file that another process truncates or rewrites
/// meanwhile gives an error or other bytes, never a signal (a mapped file that shrinks stops
/// its reader with SIGBUS). Reads may run on several threads at once.
class InputFile {
 public:
  /// @throws FileError as `read_file`.
  InputFile(const std::string& path, std::size_t limit);
  /// The same with the limit `max_input_bytes()`.
  explicit InputFile(const std::string& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// The file's size when it was opened.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Copies the bytes [offset, offset + n) into `out`. Requires offset + n <= size().
  /// @throws FileError naming the file if it now ends before offset + n (it was truncated
  /// while it was read) or the system cannot read it.
  void read(std::size_t offset, std::size_t n, char* out) const;
  /// Whether another process holds an exclusive flock(2) lock on the file, as a `TraceWriter`
  /// does while it writes a trace (a lock of this process's own is not counted: its caller
  /// knows). Read from /proc/locks: no lock is taken, so a writer that starts meanwhile is
  /// never refused. False where the system cannot tell.
  [[nodiscard]] bool locked_by_another_process() const;

 private:
  std::string path_;
  int fd_ = -1;
  std::size_t size_ = 0;
};

/// What a file system entry is, for messages: `a directory`, `a FIFO (named pipe)`, `a
/// character device`..., with `a symbolic link to ` in front when `path` is a link; empty if
/// it does not exist.
[[nodiscard]] std::string describe_file(const std::string& path);

}  // namespace clampai::kernel
