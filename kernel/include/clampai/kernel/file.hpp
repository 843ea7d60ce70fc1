// Files, the one place where the project opens them. Reading input files safely: opened once,
// checked to be regular files, read within a limit. Writing every file the project writes
// (traces, transcripts, certificates, a data directory's specs and archives, SMT-LIB dumps, the
// file ledger) under one rule: never through a symbolic link, never into a special file but
// /dev/null, never clobbering a file unless the caller says so, and whole files atomically.
// docs/FILES.md states the rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

/// Reads a file that the project wrote itself and keeps for later (a cache entry), as
/// `read_file` does, but a symbolic link is refused too, even to a regular file: an entry that
/// is not the regular file the project wrote was put there by someone else.
/// @throws FileError as `read_file`, and naming the link.
[[nodiscard]] std::string read_own_file(const std::string& path, std::size_t limit);

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

/// How `OutputFile` treats a file that exists already.
enum class WriteMode : std::uint8_t {
  create,           ///< a new file: an existing one is refused (O_EXCL), never clobbered
  replace,          ///< a new file, or an existing regular file emptied (an option such as --force)
  append,           ///< an existing regular file appended to, or a new one
  append_existing,  ///< an existing regular file appended to: a missing one is refused
  update,           ///< an existing regular file written in place (not emptied), or a new one
};

/// What `OutputFile` opens and how it names it in messages.
struct WriteOptions {
  WriteMode mode = WriteMode::create;
  /// Permissions of a new file (before the umask): 0600 for what may be private.
  unsigned permissions = 0644;
  /// Names the file in messages: "cannot open the WHAT `PATH`: ...".
  std::string what = "file";
  /// Added to the message for an existing file in `create` mode (which option replaces it).
  std::string exists_hint{};
  /// Added to the message for a missing file in `append_existing` mode.
  std::string missing_hint{};
  /// flock(2) it exclusively (without waiting) before it is emptied or written: a second
  /// writer is refused with "another process is writing it". Not for /dev/null.
  bool lock = false;
  /// Open it for reading too (O_RDWR), for a file read back while it is written.
  bool read_too = false;
  /// Whether /dev/null is accepted (what is written is discarded). False for a file that is
  /// read back, where /dev/null would lose what was written.
  bool null_ok = true;
};

/// A file opened for writing under the project's one rule. The path is opened once, with
/// O_NOFOLLOW and without blocking (a FIFO without a reader cannot hang the caller): a symbolic
/// link is refused (whatever it points to: a file is never written through a link), and so is
/// every special file (a FIFO, a socket, a directory, a device) except /dev/null, which is
/// accepted (when `null_ok`) and discards what is written. A regular file that exists is
/// refused in `create` mode, emptied in `replace` mode (after the lock, if any, is held),
/// appended to in the append modes. Writes block once it is open.
class OutputFile {
 public:
  /// @throws FileError "cannot open the WHAT `PATH`: REASON", REASON naming what is there (a
  /// symbolic link, a FIFO, a character device...), that it exists, that it is missing (and,
  /// for a missing directory, which), that it is locked, or the OS's reason.
  OutputFile(const std::string& path, const WriteOptions& options);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// The descriptor (until `release` or `close`).
  [[nodiscard]] int fd() const noexcept { return fd_; }
  /// Whether this is /dev/null: what is written is discarded, and there is nothing to sync.
  [[nodiscard]] bool discards() const noexcept { return discards_; }
  /// Writes all of `bytes` (through short writes and interruptions).
  /// @throws FileError naming the file.
  void write(std::string_view bytes);
  /// fsync(2) (nothing for /dev/null). @throws FileError naming the file.
  void sync();
  /// Closes it. @throws FileError naming the file if the system reports an error.
  void close();
  /// Gives the descriptor up to the caller, who closes it.
  [[nodiscard]] int release() noexcept;

 private:
  std::string path_;
  std::string what_;
  int fd_ = -1;
  bool discards_ = false;
};

/// Writes a whole file atomically: into a new temporary file beside it (same directory, mode
/// `permissions`), which `fill` writes, then fsync, rename over `path`, fsync of the directory.
/// A crash at any point leaves either the old file (or none) or the whole new one, and at worst
/// a temporary `.NAME.tmp-...` file, never a torn one. An existing `path` is replaced only when
/// `replace` (else refused, atomically: never clobbered); a symbolic link or a special file at
/// `path` is refused either way, except /dev/null, which is written to (and discards it). A
/// failure removes the temporary file.
/// @throws FileError "cannot write the WHAT `PATH`: REASON"; whatever `fill` throws.
void write_file_atomically(const std::string& path,
                           const std::function<void(OutputFile&)>& fill,
                           bool replace,
                           const std::string& what = "file",
                           unsigned permissions = 0644);
/// The same with the bytes `content`.
void write_file_atomically(const std::string& path,
                           std::string_view content,
                           bool replace,
                           const std::string& what = "file",
                           unsigned permissions = 0644);

/// Copies the regular file `from` (whatever its size, in pieces) to `to` atomically, as
/// `write_file_atomically`. @throws FileError naming the file at fault.
void copy_file_atomically(const std::string& from,
                          const std::string& to,
                          bool replace,
                          const std::string& what = "file");

/// What a file system entry is, for messages: `a directory`, `a FIFO (named pipe)`, `a
/// character device`..., with `a symbolic link to ` in front when `path` is a link; empty if
/// it does not exist.
[[nodiscard]] std::string describe_file(const std::string& path);

}  // namespace clampai::kernel
