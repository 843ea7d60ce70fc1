// Bounded reads of input files (file.hpp) and the trace file's writer and reader (trace.hpp):
// special files, limits, exclusive creation, locks, appending and torn tails.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "support.hpp"

using namespace clampai::kernel;
using Catch::Matchers::Contains;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = clampai::test::temp_file(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const char* kSpec = R"({"variables": {"n": {"type": "int", "initial": 0}},
  "actions": [{"id": "inc", "cost": 1, "effects": [{"variable": "n", "mode": "increment", "value": 1}]},
              {"id": "never", "cost": 1, "requires": "n < 0"}],
  "budget": {"total": 10, "min_action_cost": 1}})";

}  // namespace

TEST_CASE("File: a regular file is read whole", "[kernel][file]") {
  const std::string path = write_file("plain.json", "{\"a\": 1}\n");
  REQUIRE(read_file(path) == "{\"a\": 1}\n");
  REQUIRE(read_file(path, 9) == "{\"a\": 1}\n");
}

TEST_CASE("File: special files are named, not read", "[kernel][file]") {
  const std::string fifo = clampai::test::temp_file("fifo.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opening a FIFO must not wait for a writer: this returns at once.
  REQUIRE_THROWS_WITH(read_file(fifo), Contains("is a FIFO (named pipe), not a regular file"));
  REQUIRE_THROWS_WITH(read_file("/dev/zero"), Contains("`/dev/zero` is a character device"));
  const std::string dir = clampai::test::temp_file("dir");
  std::filesystem::create_directory(dir);
  REQUIRE_THROWS_WITH(read_file(dir), Contains("is a directory, not a regular file"));
  const std::string link = clampai::test::temp_file("zero-link.json");
  std::filesystem::create_symlink("/dev/zero", link);
  REQUIRE_THROWS_WITH(read_file(link),
                      Contains("is a symbolic link to a character device, not a regular file"));
  REQUIRE_THROWS_AS(read_file(fifo), clampai::FileError);
  REQUIRE_THROWS_WITH(read_file(clampai::test::temp_file("missing.json")),
                      Contains("No such file or directory"));
  std::filesystem::remove(fifo);
}

TEST_CASE("File: a file over the limit is refused, naming the limit", "[kernel][file]") {
  const std::string path = write_file("big.json", std::string(101, ' '));
  REQUIRE(read_file(path, 101).size() == 101);
  REQUIRE_THROWS_WITH(
      read_file(path, 100),
      Contains("is larger than the input limit of 100 bytes") && Contains("--max-input-bytes"));
}

TEST_CASE("File: an input file read at offsets; truncated meanwhile, an error, not a signal",
          "[kernel][file]") {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += static_cast<char>('a' + i % 26);
  const std::string path = write_file("pieces.txt", text);
  const InputFile file(path);
  REQUIRE(file.size() == text.size());
  std::string buffer(100, '\0');
  file.read(12345, 100, buffer.data());
  REQUIRE(buffer == text.substr(12345, 100));
  // Another process cuts the file short: a mapped reader would be stopped by SIGBUS here.
  std::filesystem::resize_file(path, 4096);
  file.read(4000, 96, buffer.data());  // what is still there reads as before
  REQUIRE(buffer.substr(0, 96) == text.substr(4000, 96));
  REQUIRE_THROWS_AS(file.read(12345, 100, buffer.data()), clampai::FileError);
  REQUIRE_THROWS_WITH(file.read(4000, 200, buffer.data()),
                      Contains("`" + path + "` changed while it was read") &&
                          Contains("it had 20000 bytes when it was opened") &&
                          Contains("now has at most 4096"));
  // The checks of read_file.
  REQUIRE_THROWS_WITH(InputFile("/dev/zero"), Contains("`/dev/zero` is a character device"));
  REQUIRE_THROWS_WITH(InputFile(path, 100), Contains("is larger than the input limit of 100"));
  REQUIRE_THROWS_WITH(InputFile(clampai::test::temp_file("missing.txt")),
                      Contains("No such file or directory"));
}

TEST_CASE("File: another process's exclusive flock on an input file is seen, and none is taken",
          "[kernel][file]") {
  const std::string path = write_file("locked.txt", "text\n");
  const InputFile file(path);
  CHECK_FALSE(file.locked_by_another_process());
  auto lock_in_child = [&](int how) {
    return [&path, how] {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || ::flock(fd, how) != 0) throw std::runtime_error("no lock");
    };
  };
  {
    const clampai::test::InChild reader(lock_in_child(LOCK_SH));
    REQUIRE(reader.ok());
    CHECK_FALSE(file.locked_by_another_process());  // a reader's lock is not a writer's
  }
  {
    const clampai::test::InChild writer(lock_in_child(LOCK_EX));
    REQUIRE(writer.ok());
    CHECK(file.locked_by_another_process());
  }
  CHECK_FALSE(file.locked_by_another_process());  // the child is gone, and its lock
  // This process's own lock is not another's; and looking took none (LOCK_NB succeeds).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  CHECK_FALSE(file.locked_by_another_process());
  ::close(fd);
}

TEST_CASE("File: byte counts take K, M and G and refuse nonsense", "[kernel][file]") {
  REQUIRE(parse_byte_count("100", "x") == 100);
  REQUIRE(parse_byte_count("64M", "x") == std::size_t{64} << 20);
  REQUIRE(parse_byte_count("2g", "x") == std::size_t{2} << 30);
  REQUIRE(parse_byte_count("512K", "x") == 512 * 1024);
  for (const char* bad : {"", "0", "-1", "1.5M", "12Q", "M", "99999999999999999999", "1 M"})
    REQUIRE_THROWS_WITH(parse_byte_count(bad, "--max-input-bytes"), Contains("--max-input-bytes"));
  REQUIRE(default_max_input_bytes == std::size_t{64} << 20);
}

TEST_CASE("TraceWriter: create never overwrites, overwrite empties, a second writer is locked out",
          "[kernel][trace][file]") {
  const std::string path = write_file("existing.jsonl", "precious\n");
  // The library names no command-line option: only `clampai run` has --append and --force.
  REQUIRE_THROWS_WITH(
      TraceWriter(path, FlushPolicy::flush, TraceOpen::create),
      Contains("already exists (a trace is never overwritten silently)") && !Contains("--"));
  REQUIRE(slurp(path) == "precious\n");
  {
    TraceWriter first(path, FlushPolicy::flush, TraceOpen::overwrite);
    REQUIRE(slurp(path).empty());
    REQUIRE_THROWS_WITH(TraceWriter(path, FlushPolicy::flush, TraceOpen::overwrite),
                        Contains("another process is writing it"));
    REQUIRE_THROWS_WITH(TraceWriter(path, FlushPolicy::flush, TraceOpen::append),
                        Contains("another process is writing it"));
  }
  // The lock goes with the writer.
  TraceWriter again(path, FlushPolicy::flush, TraceOpen::append);
  REQUIRE_THROWS_WITH(
      TraceWriter(
          clampai::test::temp_file("nodir") + "/t.jsonl", FlushPolicy::flush, TraceOpen::create),
      Contains("No such file or directory") && Contains("does not exist: create it first"));
  REQUIRE_THROWS_WITH(
      TraceWriter(clampai::test::temp_file("none.jsonl"), FlushPolicy::flush, TraceOpen::append),
      Contains("there is no trace to append to"));
  REQUIRE_THROWS_WITH(TraceWriter("/dev/zero", FlushPolicy::flush, TraceOpen::overwrite),
                      Contains("character device, not a regular file"));
  const std::string fifo = clampai::test::temp_file("trace-fifo.jsonl");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (TraceOpen mode : {TraceOpen::create, TraceOpen::overwrite, TraceOpen::append}) {
    REQUIRE_THROWS_WITH(TraceWriter(fifo, FlushPolicy::flush, mode),
                        Contains("is a FIFO (named pipe), not a regular file"));
    // /dev/null is accepted in every mode, by any number of writers at once (never locked).
    TraceWriter discarded(std::string("/dev/null"), FlushPolicy::fsync, mode);
    TraceWriter another(std::string("/dev/null"), FlushPolicy::fsync, mode);
    CHECK(discarded.discards());
    discarded.write(0, "{}");
    discarded.close();
  }
  std::filesystem::remove(fifo);
  // Never through a symbolic link, even with `overwrite` (--force): the target is untouched.
  const std::string link = clampai::test::temp_file("trace-link.jsonl");
  std::filesystem::create_symlink(path, link);
  for (TraceOpen mode : {TraceOpen::create, TraceOpen::overwrite, TraceOpen::append}) {
    REQUIRE_THROWS_WITH(TraceWriter(link, FlushPolicy::flush, mode),
                        Contains("is a symbolic link to a regular file: a file is never written "
                                 "through a symbolic link"));
  }
  std::filesystem::remove(link);
}

TEST_CASE("OutputFile: one rule for every written file: no link, no special file but /dev/null",
          "[kernel][file]") {
  const std::string target = write_file("target.txt", "precious\n");
  const std::string link = clampai::test::temp_file("link.txt");
  std::filesystem::create_symlink(target, link);
  const std::string fifo = clampai::test::temp_file("out-fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (WriteMode mode :
       {WriteMode::create, WriteMode::replace, WriteMode::append, WriteMode::update}) {
    WriteOptions o;
    o.mode = mode;
    o.what = "report";
    REQUIRE_THROWS_WITH(OutputFile(link, o),
                        Contains("cannot open the report `" + link + "`: it is a symbolic link"));
    // A FIFO without a reader: refused at once, never waited on.
    REQUIRE_THROWS_WITH(OutputFile(fifo, o),
                        Contains("is a FIFO (named pipe), not a regular file"));
    REQUIRE_THROWS_WITH(OutputFile("/dev/zero", o),
                        Contains("is a character device, not a regular file (of the special "
                                 "files only /dev/null is written to)"));
    OutputFile null("/dev/null", o);
    CHECK(null.discards());
    null.write("gone");
    null.sync();
    o.null_ok = false;
    REQUIRE_THROWS_WITH(OutputFile("/dev/null", o), Contains("it is /dev/null"));
  }
  REQUIRE(slurp(target) == "precious\n");
  // A FIFO with a reader is refused as well (opened, then seen by fstat).
  {
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    REQUIRE_THROWS_WITH(OutputFile(fifo, WriteOptions{}), Contains("FIFO"));
    ::close(reader);
  }
  std::filesystem::remove(fifo);
  // Never clobbered but on request; appended to; created with the permissions asked for.
  WriteOptions o;
  REQUIRE_THROWS_WITH(OutputFile(target, o), Contains("it already exists"));
  o.mode = WriteMode::append;
  OutputFile(target, o).write("more\n");
  REQUIRE(slurp(target) == "precious\nmore\n");
  const std::string fresh = clampai::test::temp_file("fresh.txt");
  o.permissions = 0600;
  OutputFile(fresh, o).write("x");
  struct stat st {};
  REQUIRE(::stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  o.mode = WriteMode::replace;
  OutputFile(target, o).write("new\n");
  REQUIRE(slurp(target) == "new\n");
  o.mode = WriteMode::append_existing;
  o.missing_hint = ": nothing to continue";
  REQUIRE_THROWS_WITH(OutputFile(clampai::test::temp_file("none"), o),
                      Contains("it does not exist: nothing to continue"));
}

TEST_CASE("File: whole files are written atomically, never over another file unless asked",
          "[kernel][file]") {
  const std::string dir = clampai::test::temp_file("atomic");
  std::filesystem::create_directory(dir);
  const std::string path = dir + "/spec.json";
  const auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  write_file_atomically(path, "one", /*replace=*/false, "spec");
  REQUIRE(slurp(path) == "one");
  REQUIRE_THROWS_WITH(write_file_atomically(path, "two", false, "spec"),
                      Contains("cannot write the spec `" + path + "`: it already exists"));
  REQUIRE(slurp(path) == "one");
  write_file_atomically(path, "two", /*replace=*/true, "spec");
  REQUIRE(slurp(path) == "two");
  // A failure while the content is written leaves the old file and no temporary one.
  REQUIRE_THROWS_WITH(write_file_atomically(
                          path,
                          [](OutputFile& out) {
                            out.write("half");
                            throw clampai::FileError("disk full");
                          },
                          true),
                      Contains("disk full"));
  REQUIRE(slurp(path) == "two");
  REQUIRE(listing() == std::vector<std::string>{"spec.json"});
  // A link or a special file in the way is refused, even with `replace`; /dev/null discards.
  const std::string link = dir + "/link.json";
  std::filesystem::create_symlink(path, link);
  REQUIRE_THROWS_WITH(write_file_atomically(link, "x", true), Contains("symbolic link"));
  const std::string fifo = dir + "/fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE_THROWS_WITH(write_file_atomically(fifo, "x", true), Contains("FIFO"));
  write_file_atomically("/dev/null", "x", false);
  REQUIRE(slurp(path) == "two");
  // A streamed copy.
  copy_file_atomically(path, dir + "/copy.json", false);
  REQUIRE(slurp(dir + "/copy.json") == "two");
  REQUIRE(listing() ==
          std::vector<std::string>{"copy.json", "fifo.json", "link.json", "spec.json"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("FileLedger: the rule of written files, and /dev/null refused (a ledger is read back)",
          "[kernel][file][ledger]") {
  const std::string target = write_file("ledger-target.jsonl", "precious\n");
  const std::string link = clampai::test::temp_file("ledger-link.jsonl");
  std::filesystem::create_symlink(target, link);
  REQUIRE_THROWS_WITH(
      FileLedger(link, false),
      Contains("cannot open the ledger file `" + link + "`: it is a symbolic link"));
  REQUIRE_THROWS_WITH(FileLedger("/dev/null", false),
                      Contains("it is /dev/null, which would lose what is written"));
  REQUIRE_THROWS_WITH(FileLedger("/dev/zero", false), Contains("character device"));
  REQUIRE(slurp(target) == "precious\n");
  const std::string fresh = clampai::test::temp_file("ledger-fresh.jsonl");
  FileLedger ledger(fresh, false);
  REQUIRE(ledger.read(0).empty());
  REQUIRE(std::filesystem::is_regular_file(fresh));
}

TEST_CASE("File: a file the project keeps is never read through a symbolic link",
          "[kernel][file]") {
  const std::string path = write_file("entry.json", "{}");
  REQUIRE(read_own_file(path, 100) == "{}");
  const std::string link = clampai::test::temp_file("entry-link.json");
  std::filesystem::create_symlink(path, link);
  REQUIRE(read_file(link) == "{}");  // an input may be a link
  REQUIRE_THROWS_WITH(read_own_file(link, 100),
                      Contains("is a symbolic link to a regular file: a file the project keeps "
                               "is never read through a symbolic link"));
}

TEST_CASE("Trace: a torn last line is a truncated tail after the verified entries",
          "[kernel][trace][file]") {
  const std::string path = clampai::test::temp_file("torn.jsonl");
  {
    KernelOptions options;
    options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::flush);
    SafetyKernel k(load_spec(kSpec), options);
    k.execute("inc");
    k.execute("inc");
    k.seal();
  }
  const std::string whole = slurp(path);
  const std::size_t last = whole.rfind('\n', whole.size() - 2) + 1;  // start of the seal line
  std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, last + 40);
  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE_FALSE(check.ok);
  REQUIRE(check.truncated_tail);
  REQUIRE(check.entries == 3);
  REQUIRE(check.verified_bytes == last);
  REQUIRE_THAT(check.message,
               Contains("truncated tail after 3 verified entries") &&
                   Contains("truncate -s " + std::to_string(last)) && Contains("head -n 3"));
  REQUIRE_THAT(check.message, !Contains("malformed JSON"));
  // Recovering as the message says gives a trace that verifies (unsealed).
  std::filesystem::resize_file(path, last);
  REQUIRE(verify_trace_file(path, /*allow_unsealed=*/true).ok);
}

TEST_CASE("SafetyKernel: a resumed trace continues the chain from its last state and counters",
          "[kernel][trace][file]") {
  const auto model = load_spec(kSpec);
  const std::string path = clampai::test::temp_file("resume.jsonl");
  {
    KernelOptions options;
    options.record_rejections = true;
    options.writer = std::make_shared<TraceWriter>(path, FlushPolicy::flush, TraceOpen::create);
    SafetyKernel k(model, options);
    k.execute("inc");
    k.execute("never");  // a recorded rejection
    const Outcome o = k.execute("inc");
    k.rollback(*o.receipt);
    k.execute("inc");
    // no seal: the run stops here, as a crash would leave it
  }
  std::vector<TraceEntry> entries = read_trace_file(path);
  REQUIRE(entries.size() == 6);
  auto writer = std::make_shared<TraceWriter>(path, FlushPolicy::flush, TraceOpen::append);
  writer->continue_from(entries.size());
  KernelOptions options;
  options.writer = writer;
  options.resume = entries;
  SafetyKernel k(model, options);
  REQUIRE(k.steps() == 3);
  REQUIRE(k.budget().net() == 2 * model->budget.min_action_cost);
  REQUIRE(k.state().get(*model->schema->find("n")).to_string() == "2");
  REQUIRE(k.trace().size() == 6);
  REQUIRE(k.trace().back().hash == entries.back().hash);
  const Outcome o = k.execute("inc");
  REQUIRE(o.decision.approved);
  k.rollback(*o.receipt);  // undo records of the resumed run work too
  k.seal();
  const TraceCheck check = verify_trace_file(path);
  INFO(check.message);
  REQUIRE(check.ok);
  REQUIRE(check.entries == 9);
  REQUIRE_FALSE(replay_trace(model, read_trace_file(path)).has_value());

  // A sealed trace, another spec or a changed entry cannot be continued.
  KernelOptions sealed;
  sealed.resume = read_trace_file(path);
  REQUIRE_THROWS_WITH(SafetyKernel(model, sealed), Contains("sealed"));
  KernelOptions other;
  other.resume = entries;
  REQUIRE_THROWS_WITH(SafetyKernel(load_spec(R"({"variables": {"n": {"type": "int", "initial": 0}},
        "actions": [{"id": "inc", "cost": 2}], "budget": {"total": 10, "min_action_cost": 1}})"),
                                   other),
                      Contains("another spec"));
  KernelOptions changed;
  changed.resume = entries;
  changed.resume[3].time_us += 1;
  REQUIRE_THROWS_WITH(SafetyKernel(model, changed), Contains("entry 3"));
}
