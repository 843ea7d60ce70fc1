// Bounded, non-blocking reads of input files: special files and huge files are errors. The
// one rule for every file the project writes: no symbolic links, no special files but /dev/null,
// no clobbering unless asked, whole files atomically (docs/FILES.md).
#include "clampai/kernel/file.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include "clampai/kernel/error.hpp"

namespace clampai::kernel {
namespace {

std::atomic<std::size_t> g_max_input_bytes{0};  // 0: not set

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

// Closes a descriptor it owns when it goes out of scope.
struct Fd {
  int fd = -1;
  bool owned = true;
  ~Fd() {
    if (fd >= 0 && owned) ::close(fd);
  }
};

std::string too_large(const std::string& path, std::size_t limit) {
  return "`" + path + "` is larger than the input limit of " + std::to_string(limit) +
         " bytes (raise it with --max-input-bytes or CLAMPAI_MAX_INPUT_BYTES)";
}

}  // namespace

std::size_t parse_byte_count(const std::string& text, const std::string& what) {
  std::size_t i = 0;
  std::size_t value = 0;
  constexpr std::size_t kMax = static_cast<std::size_t>(-1);
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const auto digit = static_cast<std::size_t>(text[i] - '0');
    if (value > (kMax - digit) / 10)
      throw InvalidArgument(what + ": `" + text + "` is out of range");
    value = value * 10 + digit;
  }
  std::size_t shift = 0;
  if (i + 1 == text.size()) {
    const char s = text[i];
    shift = s == 'K' || s == 'k' ? 10 : s == 'M' || s == 'm' ? 20 : s == 'G' || s == 'g' ? 30 : 64;
    if (shift != 64) ++i;
  }
  if (i == 0 || i != text.size() || value == 0) {
    throw InvalidArgument(what + ": `" + text +
                          "` is not a positive number of bytes (e.g. 1048576, 512K, 64M, 2G)");
  }
  if (shift > 0 && value > (kMax >> shift))
    throw InvalidArgument(what + ": `" + text + "` is out of range");
  return value << shift;
}

std::size_t max_input_bytes() {
  if (const std::size_t set = g_max_input_bytes.load()) return set;
  if (const char* env = std::getenv("CLAMPAI_MAX_INPUT_BYTES"); env != nullptr && *env != '\0')
    return parse_byte_count(env, "CLAMPAI_MAX_INPUT_BYTES");
  return default_max_input_bytes;
}

void set_max_input_bytes(std::size_t bytes) {
  if (bytes == 0) throw InvalidArgument("the input limit must be positive");

  g_max_input_bytes.store(bytes);
}

std::string describe_file(const std::string& path) {
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) return "";
  if (!S_ISLNK(link.st_mode)) return kind_of(link.st_mode);
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) return "a dangling symbolic link";
  return "a symbolic link to " + kind_of(target.st_mode);
}

namespace {

// Opens an input file for reading (blocking) with every check of `read_file`: `fd` gets it,
// `st` its status.
void open_input(const std::string& path,
                std::size_t limit,
                bool allow_stdin,
                Fd& fd,
                struct stat& st,
                bool follow_links = true) {
  if (path.empty()) throw FileError("an empty file name");

  const bool from_stdin = allow_stdin && path == "-";
  if (from_stdin) {
    fd.fd = STDIN_FILENO;
    fd.owned = false;
  } else {
    // Non-blocking: opening a FIFO for reading must not wait for a writer.
    fd.fd = ::open(path.c_str(),
                   O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW));
    if (fd.fd < 0) {
      const int err = errno;
      const std::string what = describe_file(path);
      if (!follow_links && what.starts_with("a symbolic link"))
        throw FileError("`" + path + "` is " + what +
                        ": a file the project keeps is never read through a symbolic link");
      if (!what.empty() && what != "a regular file")
        throw FileError("`" + path + "` is " + what + ", not a regular file");
      throw FileError("cannot read `" + path + "`: " + std::strerror(err));
    }
  }
  if (::fstat(fd.fd, &st) != 0)
    throw FileError("cannot read `" + path + "`: " + std::strerror(errno));
  const bool regular = S_ISREG(st.st_mode);
  if (from_stdin ? S_ISDIR(st.st_mode) : !regular) {
    throw FileError("`" + path + "` is " +
                    (from_stdin ? kind_of(st.st_mode) : describe_file(path)) +
                    ", not a regular file");
  }
  if (regular && static_cast<std::size_t>(st.st_size) > limit)
    throw FileError(too_large(path, limit));
  if (!from_stdin) {
    const int flags = ::fcntl(fd.fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(fd.fd, F_SETFL, flags & ~O_NONBLOCK);
  }
}

// Reads what is left of `fd`, within `limit` bytes.
std::string read_rest(int fd, const std::string& path, std::size_t limit, std::size_t expected) {
  std::string out;
  out.reserve(expected);
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError("cannot read `" + path + "`: " + std::strerror(errno));
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > limit) throw FileError(too_large(path, limit));
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace

std::string read_file(const std::string& path, std::size_t limit, bool allow_stdin) {
  Fd fd;
  struct stat st {};
  open_input(path, limit, allow_stdin, fd, st);
  return read_rest(
      fd.fd, path, limit, S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) : 0);
}

std::string read_own_file(const std::string& path, std::size_t limit) {
  Fd fd;
  struct stat st {};
  open_input(path, limit, /*allow_stdin=*/false, fd, st, /*follow_links=*/false);
  return read_rest(fd.fd, path, limit, static_cast<std::size_t>(st.st_size));
}

InputFile::InputFile(const std::string& path, std::size_t limit) : path_(path) {
  Fd fd;
  struct stat st {};
  open_input(path, limit, /*allow_stdin=*/false, fd, st);
  size_ = static_cast<std::size_t>(st.st_size);
  fd_ = fd.fd;
  fd.fd = -1;  // owned here now
}

InputFile::InputFile(const std::string& path) : InputFile(path, max_input_bytes()) {}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read(std::size_t offset, std::size_t n, char* out) const {
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw FileError("cannot read `" + path_ + "`: " + std::strerror(errno));
    }
    if (got == 0) {
      throw FileError("`" + path_ + "` changed while it was read: it had " + std::to_string(size_) +
                      " bytes when it was opened and now has at most " + std::to_string(offset) +
                      " (another process truncated or replaced it); read it again once nothing "
                      "rewrites it");
    }
    out += got;
    offset += static_cast<std::size_t>(got);
    n -= static_cast<std::size_t>(got);
  }
}

bool InputFile::locked_by_another_process() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return false;
  // A lock's line: `1: FLOCK  ADVISORY  WRITE 5859 fe:00:10955211 0 EOF` (the device's major
  // and minor numbers in hex, then the inode); a waiter's has `->` after the number.
  char id[64];
  std::snprintf(id,
                sizeof id,
                "%02x:%02x:%llu",
                major(st.st_dev),
                minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, type, kind, access, pid, where;
    fields >> number >> type >> kind >> access >> pid >> where;
    if (type == "FLOCK" && access == "WRITE" && where == id && pid != std::to_string(::getpid()))
      return true;
  }
  return false;
}

std::string read_file(const std::string& path) { return read_file(path, max_input_bytes()); }

// ---- writing: the one rule ----

namespace {

bool is_null_device(const struct stat& st) {
  return S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

// Why `path` (lstat `st`) cannot be written, or "" when it can.
std::string refusal(const std::string& path, const struct stat& st, bool null_ok) {
  if (S_ISLNK(st.st_mode)) {
    return "it is " + describe_file(path) +
           ": a file is never written through a symbolic link (name the file itself)";
  }
  if (S_ISREG(st.st_mode)) return "";
  if (is_null_device(st)) {
    return null_ok ? "" : "it is /dev/null, which would lose what is written";
  }
  return "it is " + kind_of(st.st_mode) + ", not a regular file (of the special files only " +
         "/dev/null is written to)";
}

std::string missing_directory(const std::string& path) {
  const std::filesystem::path p(path);
  if (!p.has_parent_path()) return "";
  std::error_code ec;
  if (std::filesystem::exists(p.parent_path(), ec)) return "";
  return " (the directory `" + p.parent_path().string() + "` does not exist: create it first)";
}

}  // namespace

OutputFile::OutputFile(const std::string& path, const WriteOptions& options)
    : path_(path), what_(options.what) {
  const auto fail = [&](const std::string& why) -> void {
    throw FileError("cannot open the " + what_ + " `" + path + "`: " + why);
  };
  if (path.empty()) throw FileError("the " + what_ + ": an empty file name");
  const WriteMode mode = options.mode;
  // What is there decides first: opening a device or a FIFO may itself do something.
  struct stat there {};
  const bool exists = ::lstat(path.c_str(), &there) == 0;
  if (exists) {
    if (const std::string why = refusal(path, there, options.null_ok); !why.empty()) fail(why);
    if (mode == WriteMode::create && S_ISREG(there.st_mode))
      fail("it already exists" + options.exists_hint);
  }
  const bool null_device = exists && is_null_device(there);
  int flags =
      (options.read_too ? O_RDWR : O_WRONLY) | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK;
  if (!null_device) {
    flags |= mode == WriteMode::create            ? O_CREAT | O_EXCL
             : mode == WriteMode::append_existing ? O_APPEND
             : mode == WriteMode::append          ? O_APPEND | O_CREAT
                                                  : O_CREAT;  // replace, update
  }
  fd_ = ::open(path.c_str(), flags, static_cast<mode_t>(options.permissions));
  if (fd_ < 0) {
    const int err = errno;
    struct stat now {};
    if (::lstat(path.c_str(), &now) == 0) {
      if (const std::string why = refusal(path, now, options.null_ok); !why.empty()) fail(why);
    }
    if (err == EEXIST) fail("it already exists" + options.exists_hint);
    if (err == ENOENT && mode == WriteMode::append_existing)
      fail("it does not exist" + options.missing_hint);
    if (err == ENXIO) fail("it is a FIFO (named pipe), not a regular file");
    fail(std::strerror(err) + (err == ENOENT ? missing_directory(path) : std::string()));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(std::strerror(err));
  }
  discards_ = is_null_device(st);
  if (!S_ISREG(st.st_mode) && !(discards_ && options.null_ok)) {
    ::close(fd_);
    fd_ = -1;
    fail(refusal(path, st, options.null_ok));
  }
  if (!discards_ && options.lock && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(err == EWOULDBLOCK ? std::string("another process is writing it (it is locked)")
                            : std::string(std::strerror(err)));
  }
  // Emptied only now that no other writer can be using it.
  if ((!discards_ && mode == WriteMode::replace && ::ftruncate(fd_, 0) != 0) ||
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    fail(std::strerror(err));
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw FileError("cannot write the " + what_ + " `" + path_ +
                      "`: " + std::strerror(n < 0 ? errno : EIO));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void OutputFile::sync() {
  if (discards_ || fd_ < 0) return;
  if (::fsync(fd_) != 0)
    throw FileError("cannot write the " + what_ + " `" + path_ +
                    "`: fsync: " + std::strerror(errno));
}

void OutputFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR)
    throw FileError("cannot write the " + what_ + " `" + path_ + "`: " + std::strerror(errno));
}

int OutputFile::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

namespace {

// fsync of the directory holding `path`, so that a rename in it survives a crash. File systems
// that cannot sync a directory (EINVAL) have nothing more to do.
void sync_directory(const std::string& dir, const std::string& path, const std::string& what) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // the rename is done; a directory we cannot open we cannot sync either
  const bool ok = ::fsync(fd) == 0 || errno == EINVAL;
  const int err = errno;
  ::close(fd);
  if (!ok)
    throw FileError("cannot write the " + what + " `" + path +
                    "`: fsync of its directory: " + std::strerror(err));
}

}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(OutputFile&)>& fill,
                           bool replace,
                           const std::string& what,
                           unsigned permissions) {
  const auto fail = [&](const std::string& why) {
    throw FileError("cannot write the " + what + " `" + path + "`: " + why);
  };
  if (path.empty()) throw FileError("the " + what + ": an empty file name");
  struct stat there {};
  if (::lstat(path.c_str(), &there) == 0) {
    if (const std::string why = refusal(path, there, /*null_ok=*/true); !why.empty()) fail(why);
    if (is_null_device(there)) {  // nothing to keep: written to, and discarded
      WriteOptions o;
      o.mode = WriteMode::append_existing;
      o.what = what;
      OutputFile out(path, o);
      fill(out);
      out.close();
      return;
    }
    if (!replace) fail("it already exists");
  }
  const std::filesystem::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  // Unique per process, thread and call: writers sharing a directory never meet.
  static std::atomic<std::uint64_t> counter{0};
  const std::string tmp =
      (std::filesystem::path(dir) /
       ("." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
        std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000) + "-" +
        std::to_string(counter.fetch_add(1))))
          .string();
  WriteOptions o;
  o.mode = WriteMode::create;
  o.what = what;
  o.permissions = permissions;
  std::optional<OutputFile> out;
  try {
    out.emplace(tmp, o);
  } catch (const FileError& e) {
    const std::string message = e.what();
    const auto colon = message.find("`: ");
    fail(colon == std::string::npos ? message : message.substr(colon + 3));
  }
  try {
    fill(*out);
    out->sync();
    out->close();
    if (replace) {
      if (::rename(tmp.c_str(), path.c_str()) != 0) fail(std::strerror(errno));
    } else if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
      int err = errno;
      if (err == EINVAL || err == ENOSYS) {  // a file system without RENAME_NOREPLACE
        err = ::link(tmp.c_str(), path.c_str()) == 0 ? 0 : errno;
        if (err == 0) ::unlink(tmp.c_str());
      }
      if (err == EEXIST) fail("it already exists");
      if (err != 0) fail(std::strerror(err));
    }
  } catch (...) {
    out.reset();
    ::unlink(tmp.c_str());
    throw;
  }
  sync_directory(dir, path, what);
}

void write_file_atomically(const std::string& path,
                           std::string_view content,
                           bool replace,
                           const std::string& what,
                           unsigned permissions) {
  write_file_atomically(
      path, [&](OutputFile& out) { out.write(content); }, replace, what, permissions);
}

void copy_file_atomically(const std::string& from,
                          const std::string& to,
                          bool replace,
                          const std::string& what) {
  const InputFile in(from, static_cast<std::size_t>(-1));
  write_file_atomically(
      to,
      [&](OutputFile& out) {
        std::string buffer(std::min<std::size_t>(in.size(), std::size_t{1} << 20), '\0');
        for (std::size_t at = 0; at < in.size();) {
          const std::size_t n = std::min(buffer.size(), in.size() - at);
          in.read(at, n, buffer.data());
          out.write(std::string_view(buffer.data(), n));
          at += n;
        }
      },
      replace,
      what);
}

}  // namespace clampai::kernel
