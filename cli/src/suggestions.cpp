// Did-you-mean messages for command-line mistakes.
#include "suggestions.hpp"

#include <vector>

#include "clampai/kernel/suggest.hpp"

namespace clampai::cli {
namespace {

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

std::string list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The choices of an option, from CLI11's type name (`TEXT:{text,json}`); empty if none.
std::vector<std::string> choices(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  const auto open = type.find('{');
  const auto close = type.find('}', open);
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos) return out;
  std::string item;
  for (std::size_t i = open + 1; i < close; ++i) {
    if (type[i] == ',') {
      out.push_back(item);
      item.clear();
    } else {
      item += type[i];
    }
  }
  out.push_back(item);
  return out;
}

// The option named `name` in `cmd` or one of its parents.
const CLI::Option* find_option(const CLI::App* cmd, const std::string& name) {
  for (; cmd != nullptr; cmd = cmd->get_parent()) {
    if (const CLI::Option* opt = cmd->get_option_no_throw(name)) return opt;
  }
  return nullptr;
}

std::vector<std::string> option_names(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (; cmd != nullptr; cmd = cmd->get_parent()) {
    for (const CLI::Option* opt : cmd->get_options()) {
      for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    }
  }
  return names;
}

}  // namespace

std::string parse_error_hint(const CLI::App& app, int argc, char** argv) {
  const CLI::App* cmd = &app;
  std::string path = "clampai";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
      const auto eq = arg.find('=');
      const std::string name = arg.substr(0, eq);
      const CLI::Option* opt = find_option(cmd, name);
      if (opt == nullptr) {
        return "unknown option `" + name + "` for `" + path + "`" +
               kernel::did_you_mean(name, option_names(cmd));
      }
      if (opt->get_type_size() == 0) continue;  // a flag
      std::string value;
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        continue;
      }
      const std::vector<std::string> allowed = choices(*opt);
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
        return "`" + name + "`: unknown value `" + value + "`" +
               kernel::did_you_mean(value, allowed) + " (expected one of: " + list(allowed) + ")";
      }
      continue;
    }
    if (arg.empty() || arg[0] == '-') continue;
    const std::vector<std::string> subs = subcommand_names(*cmd);
    if (subs.empty()) continue;  // a positional argument of `cmd`
    const auto found = std::find(subs.begin(), subs.end(), arg);
    if (found == subs.end()) {
      return "unknown command `" + arg + "`" + kernel::did_you_mean(arg, subs) + " (commands of `" +
             path + "`: " + list(subs) + ")";
    }
    cmd = cmd->get_subcommand(arg);
    path += " " + arg;
  }
  return "";
}

}  // namespace clampai::cli
