#include "entries.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "../cli/src/output.hpp"
#include "clampai/composition/compose.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/kernel/trace.hpp"

namespace clampai::fuzz {

namespace fs = std::filesystem;

namespace {

void must(bool ok, const std::string& what) {
  if (!ok) throw Broken(what);
}

// Every variable type, optional variables, and an action with an int and a decimal parameter.
constexpr std::string_view kScopeSpec = R"({
  "name": "fuzz-scope",
  "variables": {
    "b": {"type": "bool", "initial": true},
    "i": {"type": "int", "initial": 3, "min": -100, "max": 100},
    "d": {"type": "decimal", "scale": 2, "initial": "1.25"},
    "s": {"type": "string", "initial": "abc"},
    "e": {"type": "enum", "values": ["red", "green"], "initial": "red"},
    "l": {"type": "list", "element": "int", "initial": [1, 2, 3], "max_length": 10},
    "ls": {"type": "list", "element": "string", "initial": ["x"]},
    "o": {"type": "int", "initial": 0, "optional": true}
  },
  "actions": [{"id": "act", "cost": 1,
               "parameters": {"n": {"type": "int", "min": 0, "max": 9},
                              "f": {"type": "decimal", "scale": 1, "min": "0", "max": "1"}},
               "effects": []}],
  "budget": {"total": 10, "min_action_cost": 1}
})";

// A scratch directory of this process, removed at exit.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("clampai-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

const fs::path& scratch() {
  static const Scratch s;
  return s.dir;
}

std::string write(const fs::path& file, std::string_view input) {
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(input.data(), static_cast<std::streamsize>(input.size()));
  return file.string();
}

}  // namespace

void expression(std::string_view input) {
  static const auto model = kernel::load_spec(kScopeSpec);
  const kernel::Action& act = model->actions.front();
  const kernel::ExprScope scope = model->scope(&act, /*allow_old=*/true);
  const kernel::ExprPtr e = kernel::parse_expression(input, scope, "fuzz");
  must(e != nullptr, "parse_expression returned null");
  const std::string printed = kernel::to_source(*e);
  kernel::ExprPtr again;
  try {
    again = kernel::parse_expression(printed, scope, "fuzz");
  } catch (const Error& err) {
    throw Broken("`" + printed +
                 "`, printed from an accepted expression, is refused: " + err.what());
  }
  must(kernel::to_source(*again) == printed, "printing is not stable: `" + printed + "`");
  const kernel::State& s = model->initial_state();
  const kernel::Value params[] = {kernel::Value::number(kernel::Decimal{4, 0}),
                                  kernel::Value::number(kernel::Decimal{5, 1})};
  (void)kernel::evaluate(*e, kernel::EvalEnv{&s, nullptr, &s, params});
}

void spec(std::string_view input) {
  const auto model = kernel::load_spec(input);
  const auto again = kernel::load_spec(input);
  must(model->digest == again->digest, "one text, two digests");
  const kernel::State& s = model->initial_state();
  for (kernel::VarId v = 0; v < model->variables.size(); ++v) {
    const kernel::Value& x = s.get(v);
    if (!x.is_defined()) continue;
    using K = kernel::Type::Kind;
    const K t = model->variables[v].type.kind();
    const bool fits =
        t == K::boolean                         ? x.kind() == kernel::Value::Kind::boolean
        : model->variables[v].type.is_numeric() ? x.kind() == kernel::Value::Kind::number
        : model->variables[v].type.is_textual() ? x.kind() == kernel::Value::Kind::string
                                                : x.kind() == kernel::Value::Kind::list;
    must(fits, "the initial value of `" + model->variables[v].name + "` is not of its type");
  }
}

void trace(std::string_view input) {
  const std::string file = write(scratch() / "trace.jsonl", input);
  kernel::TraceCheck from_file;
  try {
    from_file = kernel::verify_trace_file(file, /*allow_unsealed=*/true);
  } catch (const Error&) {
    return;  // not a trace at all
  }
  std::vector<kernel::TraceEntry> entries;
  try {
    entries = kernel::read_trace_file(file);
  } catch (const Error&) {
    must(!from_file.ok, "verify_trace_file accepts a trace read_trace_file refuses");
    return;
  }
  const kernel::TraceCheck from_entries = kernel::verify_chain(entries, true);
  if (from_file.ok) must(from_entries.ok, "the file verifies but its entries do not");
  for (const auto& entry : entries) (void)entry.to_json_line();
}

void manifest(std::string_view input) {
  static const fs::path dir = [] {
    const fs::path d = scratch() / "compose";
    fs::create_directories(d);
    for (const auto& f : fs::directory_iterator(fs::path(CLAMPAI_SOURCE_DIR) / "examples/compose"))
      fs::copy_file(f.path(), d / f.path().filename(), fs::copy_options::overwrite_existing);
    return d;
  }();
  const auto m = composition::load_manifest(write(dir / "fuzz-manifest.json", input));
  (void)composition::to_dot(m);
}

void params(std::string_view input) {
  const kernel::ParamMap p = cli::parse_params(std::string(input));
  for (const auto& [name, v] : p)
    must(v.kind() == kernel::Value::Kind::number, "parameter `" + name + "` is no number");
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"expression", &expression},
                                          {"spec", &spec},
                                          {"trace", &trace},
                                          {"manifest", &manifest},
                                          {"params", &params}};
  return all;
}

int run_one(void (*run)(std::string_view), const std::uint8_t* data, std::size_t size) {
  try {
    run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Broken&) {
    throw;
  } catch (const Error&) {
    // refused with the project's error: fine
  }
  return 0;
}

}  // namespace clampai::fuzz
