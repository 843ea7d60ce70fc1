// What the differential tests against the extracted Coq model (model_differential.cpp,
// pools_differential.cpp) share: unbounded integers as text, and the model program
// (coq/extract/driver.ml) as a child process driven line by line over pipes.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace clampai::formal {

using i128 = __int128;

constexpr i128 int64_max = std::numeric_limits<std::int64_t>::max();
constexpr i128 int64_min = std::numeric_limits<std::int64_t>::min();

inline bool fits(i128 v) { return v >= int64_min && v <= int64_max; }

inline std::string str(i128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  std::string out;
  while (v != 0) {
    const int digit = static_cast<int>(v % 10);
    out.push_back(static_cast<char>('0' + (negative ? -digit : digit)));
    v /= 10;
  }
  if (negative) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

inline i128 parse_i128(const std::string& text) {
  i128 v = 0;
  std::size_t i = text.size() > 0 && text[0] == '-' ? 1 : 0;
  if (i == text.size()) throw std::runtime_error("model: not an integer: `" + text + "`");
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      throw std::runtime_error("model: not an integer: `" + text + "`");
    v = v * 10 + (text[i] - '0');
  }
  return text[0] == '-' ? -v : v;
}

inline i128 pow10_128(int k) {
  i128 p = 1;
  for (int i = 0; i < k; ++i) p *= 10;
  return p;
}

// `units` budget units at `scale` as decimal text (`12.345`).
inline std::string amount_text(i128 units, int scale) {
  if (units < 0) return "-" + amount_text(-units, scale);
  const i128 p = pow10_128(scale);
  std::string out = str(units / p);
  if (scale > 0) {
    std::string frac = str(units % p);
    out += '.' + std::string(static_cast<std::size_t>(scale) - frac.size(), '0') + frac;
  }
  return out;
}

// A difference between the model and the C++ (or a broken protocol).
struct Mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// The extracted model as a child process: one line out, one line back.

class ModelProcess {
 public:
  explicit ModelProcess(const std::string& path) {
    int to_child[2];
    int from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0)
      throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      close(to_child[0]);
      close(to_child[1]);
      close(from_child[0]);
      close(from_child[1]);
      execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
      std::fprintf(stderr, "cannot run %s: %s\n", path.c_str(), std::strerror(errno));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    out_ = fdopen(to_child[1], "w");
    in_ = fdopen(from_child[0], "r");
    if (out_ == nullptr || in_ == nullptr) throw std::runtime_error("fdopen failed");
  }
  ModelProcess(const ModelProcess&) = delete;
  ModelProcess& operator=(const ModelProcess&) = delete;
  ~ModelProcess() {
    std::fclose(out_);
    std::fclose(in_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }

  // Sends a line that has no answer (a declaration).
  void tell(const std::string& line) { std::fputs((line + '\n').c_str(), out_); }

  // Sends a line and returns the answer's tokens.
  std::vector<std::string> ask(const std::string& line) {
    tell(line);
    std::fflush(out_);
    char* buffer = nullptr;
    std::size_t capacity = 0;
    const ssize_t n = getline(&buffer, &capacity, in_);
    std::string answer = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
    std::free(buffer);
    if (n <= 0) throw std::runtime_error("the model program ended after `" + line + "`");
    std::istringstream tokens(answer);
    std::vector<std::string> out;
    for (std::string t; tokens >> t;) out.push_back(t);
    if (out.empty() || out[0] == "error")
      throw std::runtime_error("the model refused `" + line + "`: " + answer);
    return out;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  FILE* in_ = nullptr;
};

}  // namespace clampai::formal
