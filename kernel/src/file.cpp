// Bounded, non-blocking reads of input files: special files and huge files are errors.
#include "clampai/kernel/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

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
void open_input(
    const std::string& path, std::size_t limit, bool allow_stdin, Fd& fd, struct stat& st) {
  if (path.empty()) throw FileError("an empty file name");

  const bool from_stdin = allow_stdin && path == "-";
  if (from_stdin) {
    fd.fd = STDIN_FILENO;
    fd.owned = false;
  } else {
    // Non-blocking: opening a FIFO for reading must not wait for a writer.
    fd.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd.fd < 0) {
      const int err = errno;
      const std::string what = describe_file(path);
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

}  // namespace clampai::kernel
