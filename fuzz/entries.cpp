#include "entries.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "clampai/composition/compose.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/pools.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/server.hpp"
#include "clampai/server/gateway.hpp"

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
  (void)kernel::evaluate(*e, kernel::EvalEnv{&s, {}, &s, params});
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
  const kernel::ParamMap p =
      input.empty() ? kernel::ParamMap{} : kernel::parse_named_numbers(input, "--params");
  for (const auto& [name, v] : p)
    must(v.kind() == kernel::Value::Kind::number, "parameter `" + name + "` is no number");
}

namespace {

const std::string& autoscale_spec() {
  static const std::string text =
      kernel::read_file((fs::path(CLAMPAI_SOURCE_DIR) / "examples/autoscale.json").string());
  return text;
}

// Splits at each line that is exactly `sep` (the separator lines are dropped).
std::vector<std::string_view> split_at_lines(std::string_view input, std::string_view sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0, at = 0;
  while (at <= input.size()) {
    const std::size_t nl = std::min(input.find('\n', at), input.size());
    if (input.substr(at, nl - at) == sep) {
      parts.push_back(input.substr(start, at - start));
      start = std::min(nl + 1, input.size());
    }
    at = nl + 1;
  }
  parts.push_back(input.substr(std::min(start, input.size())));
  return parts;
}

nlohmann::json must_parse(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Broken(what + " is not JSON (" + e.what() + "): " + text.substr(0, 200));
  }
}

}  // namespace

void service(std::string_view input) {
  constexpr std::string_view kToken = "fuzz-token-0123456789";
  server::ServiceOptions options;
  options.token = std::string(kToken);
  options.limits.max_body_bytes = 64 * 1024;
  options.limits.max_lookahead_depth = 3;  // keep an input's searches short
  options.limits.solver_timeout_ms = 200;
  server::Service svc(options);
  const std::string task = svc.add_task(autoscale_spec(), "autoscale.json");
  const std::string bearer = "Bearer " + std::string(kToken);
  const auto state = [&] {
    server::Response r = svc.handle({"GET", "/v1/tasks/" + task + "/state", bearer, ""});
    must(r.status == 200, "GET state answered " + std::to_string(r.status));
    return r.body;
  };
  std::size_t n = 0, searches = 0;
  for (const std::string_view part : split_at_lines(input, "%%")) {
    if (++n > 16) break;  // a bounded session per input
    const std::size_t nl = std::min(part.find('\n'), part.size());
    std::string_view line = part.substr(0, nl);
    server::Request req;
    // `!METHOD TARGET`: a request whose body the transport could not read (its length unknown).
    if (line.starts_with('!')) {
      line.remove_prefix(1);
      req.body_unreadable = "Transfer-Encoding `gzip`: its length cannot be determined";
    }
    const std::size_t sp1 = std::min(line.find(' '), line.size());
    req.method = std::string(line.substr(0, sp1));
    const std::string_view rest = line.substr(std::min(sp1 + 1, line.size()));
    const std::size_t sp2 = std::min(rest.find(' '), rest.size());
    req.target = std::string(rest.substr(0, sp2));
    req.authorization = sp2 < rest.size() ? std::string(rest.substr(sp2 + 1)) : bearer;
    req.body = std::string(part.substr(std::min(nl + 1, part.size())));
    // Searches and proofs (each bounded by the solver's limit) at most twice an input, so that
    // an input stays well within libFuzzer's time limit.
    const std::string_view path = std::string_view(req.target).substr(0, req.target.find('?'));
    if (path.ends_with("/lookahead") || path.ends_with("/repair") || path.ends_with("/verify")) {
      if (++searches > 2) continue;
    }
    const std::string before = state();
    server::Response r = svc.handle(req);
    const std::string what = req.method + " " + req.target + " (" + std::to_string(r.status) + ")";
    if (!req.body_unreadable.empty())
      must(r.status == 400 && must_parse(r.body, what)["error"]["code"] == "malformed_request",
           what + ": a request whose body was lost was not refused as malformed");
    static constexpr int kStatuses[] = {200, 201, 400, 401, 404, 405, 409, 413, 431, 500, 503};
    must(std::find(std::begin(kStatuses), std::end(kStatuses), r.status) != std::end(kStatuses),
         what + ": a status the API does not document");
    if (r.next_chunk) {
      must(r.status == 200 && r.body.empty(), what + ": a stream with a body");
      std::string chunk;
      for (std::size_t chunks = 0; r.next_chunk(chunk); ++chunks) {
        must(chunks < 100000, what + ": a stream that does not end");
        must(!chunk.empty() && chunk.back() == '\n', what + ": a chunk of a partial line");
      }
      continue;
    }
    if (r.content_type != "application/json") continue;  // /metrics
    const nlohmann::json body = must_parse(r.body, what + ": the body");
    if (r.status < 400) continue;
    must(body.contains("error") && body["error"]["code"].is_string() &&
             body["error"]["message"].is_string() && !body["error"]["message"].empty(),
         what + ": an error without a code and a message: " + r.body);
    // An error changes no kernel (a 500 trace_write_failed is after a commit: none here).
    must(state() == before, what + ": an error changed the task's state");
  }
}

void mcp(std::string_view input) {
  server::McpSession session(kernel::load_spec(autoscale_spec()));
  std::size_t n = 0, searches = 0;
  for (std::size_t at = 0; at < input.size();) {
    const std::size_t nl = std::min(input.find('\n', at), input.size());
    const std::string_view line = input.substr(at, nl - at);
    at = nl + 1;
    if (line.empty()) continue;
    if (++n > 32) break;  // a bounded session per input
    // The lookahead and repair tools (each bounded by 5 s of search) once an input at most, so
    // that an input stays within libFuzzer's time limit.
    if (line.find("lookahead") != std::string_view::npos ||
        line.find("repair") != std::string_view::npos) {
      if (++searches > 1) continue;
    }
    const std::string answer = session.handle(line);
    if (answer.empty()) continue;  // a notification, or a response of the client
    must(answer.find('\n') == std::string::npos, "an answer of more than one line");
    const nlohmann::json r = must_parse(answer, "the answer");
    must(r.is_object() && r.value("jsonrpc", "") == "2.0", "not a JSON-RPC 2.0 answer: " + answer);
    must(r.contains("id"), "an answer without an id: " + answer);
    // A message whose one id nlohmann reads (it keeps the last of duplicate keys, and refuses a
    // number beyond double's range) is answered with that id, whatever else is wrong with it.
    int ids = 0;  // keys `id` of the top-level object
    const nlohmann::json asked = nlohmann::json::parse(
        line,
        [&ids](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed == "id") ++ids;
          return true;
        },
        false);
    if (ids == 1 && asked.is_object() && asked.contains("id") &&
        (asked["id"].is_string() || asked["id"].is_number_integer()))
      must(r["id"] == asked["id"], "an answer without the message's id: " + answer);
    must(r.contains("result") != r.contains("error"),
         "an answer with both or neither of result and error: " + answer);
    if (r.contains("error"))
      must(r["error"]["code"].is_number_integer() && r["error"]["message"].is_string(),
           "an error without an integer code and a message: " + answer);
  }
}

void bindings(std::string_view input) {
  const std::size_t nl = std::min(input.find('\n'), input.size());
  const std::string_view first = input.substr(0, nl);
  const std::string norm = server::normalise_path(first);
  if (!norm.empty()) {
    must(server::normalise_path(norm) == norm, "normalising is not idempotent: `" + norm + "`");
    must(server::path_under(first, norm), "a path does not lie under its own normal form");
  }
  server::BindingExpr e;
  try {
    e = server::parse_binding_expr(first, "e");
  } catch (const SpecError&) {
    return;
  }
  kernel::jsonio::JsonNode args;
  const std::string_view rest = nl < input.size() ? input.substr(nl + 1) : std::string_view();
  try {
    args = kernel::jsonio::parse_json(rest, "arguments");
  } catch (const Error&) {
    return;
  }
  try {
    const kernel::Value v = server::evaluate_binding(e, &args);
    must(v.kind() == kernel::Value::Kind::number, "a binding that is not a number");
    if (e.op == server::BindingExpr::Op::under)
      must(v == kernel::Value::integer(0) || v == kernel::Value::integer(1), "under is not 0 or 1");
  } catch (const InvalidArgument&) {
  }
}

// A principals file: refused with an error, or read into principals whose tokens are digests
// and whose rights are rights.
void principals(std::string_view input) {
  const auto all = server::parse_principals(input, "principals");
  must(!all.empty(), "no principal accepted");
  for (const auto& p : all) {
    must(p.token_sha256.size() == 64 &&
             p.token_sha256.find_first_not_of("0123456789abcdef") == std::string::npos,
         "a token digest that is not 64 lowercase hex digits");
    for (const auto& [task, mask] : p.rights)
      must((mask & ~server::kAllRights) == 0, "a right that is none of the five");
  }
}

// A pools file: refused with an error, or a tree whose parents come first, nothing spent, and
// whose levels charges never overspend.
void pools(std::string_view input) {
  const auto tree = kernel::load_pools(input);
  const std::vector<kernel::PoolStatus> before = tree->status();
  std::vector<std::string> seen;
  for (const auto& p : before) {
    must(p.parent.empty() || std::find(seen.begin(), seen.end(), p.parent) != seen.end(),
         "a pool listed before its parent");
    must(p.net == 0 && p.gross == 0 && p.total >= 0, "a fresh pool with spend or a negative total");
    seen.push_back(p.name);
  }
  if (before.empty()) return;
  try {
    const std::size_t leaf = tree->bind(before.back().name, 3);
    kernel::PoolTree::Chain chain(*tree, leaf, 3);
    for (const kernel::Amount c :
         {kernel::Amount{1}, kernel::Amount{1000}, kernel::Amount{1} << 40})
      if (!chain.refusing(c)) (void)chain.charge(c);
  } catch (const SpecError&) {  // a total not exact at scale 3
  }
  for (const auto& p : tree->status())
    must(p.net >= 0 && p.net <= p.total, "a pool level overspent");
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"expression", &expression},
                                          {"spec", &spec},
                                          {"trace", &trace},
                                          {"manifest", &manifest},
                                          {"params", &params},
                                          {"service", &service},
                                          {"mcp", &mcp},
                                          {"bindings", &bindings},
                                          {"principals", &principals},
                                          {"pools", &pools}};
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
