// The principals file of `clampai serve --principals` (docs/SERVE.md).
#include "clampai/server/principals.hpp"

#include <array>
#include <set>

#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/suggest.hpp"
#include "task.hpp"

namespace clampai::server {

namespace ck = clampai::kernel;
using ck::jsonio::JsonNode;

namespace {

constexpr std::array<Right, 5> kRights{
    Right::read, Right::decide, Right::execute, Right::approve, Right::admin};

std::vector<std::string> names_of_rights() {
  std::vector<std::string> names;
  for (const Right r : kRights) names.emplace_back(right_name(r));
  return names;
}

// An object's members must be among `allowed`; `where` names it in the error.
void only_keys(const JsonNode& n,
               const std::string& where,
               const std::vector<std::string>& allowed,
               const std::string& origin) {
  for (const auto& [k, v] : n.members) {
    bool found = false;
    for (const auto& a : allowed) found = found || a == k;
    if (!found)
      throw InvalidArgument(origin + ": " + where + ": unknown key `" + k + "`" +
                            ck::did_you_mean(k, allowed));
  }
}

const JsonNode& member(const JsonNode& n,
                       std::string_view key,
                       JsonNode::Kind kind,
                       const std::string& where,
                       const std::string& origin) {
  const JsonNode* m = n.find(key);
  const std::string at = where + "." + std::string(key);
  if (m == nullptr)
    throw InvalidArgument(origin + ": " + where + ": missing key `" + std::string(key) + "`");
  if (m->kind != kind)
    throw InvalidArgument(origin + ": " + at + ": expected " +
                          (kind == JsonNode::Kind::string  ? "a string"
                           : kind == JsonNode::Kind::array ? "an array"
                                                           : "an object") +
                          ", found " + ck::jsonio::describe(*m));
  return *m;
}

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  return true;
}

}  // namespace

std::string_view right_name(Right r) {
  switch (r) {
    case Right::read:
      return "read";
    case Right::decide:
      return "decide";
    case Right::execute:
      return "execute";
    case Right::approve:
      return "approve";
    case Right::admin:
      return "admin";
  }
  return "?";
}

std::optional<Right> right_named(std::string_view name) {
  for (const Right k : kRights)
    if (right_name(k) == name) return k;
  return std::nullopt;
}

Rights Principal::on(std::string_view task) const {
  Rights r = 0;
  if (const auto it = rights.find("*"); it != rights.end()) r |= it->second;
  if (!task.empty())
    if (const auto it = rights.find(task); it != rights.end()) r |= it->second;
  return r;
}

bool Principal::may(Right r, std::string_view task) const {
  return (on(task) & static_cast<Rights>(r)) != 0;
}

bool Principal::may_somewhere(Right r) const {
  for (const auto& [task, mask] : rights)
    if ((mask & static_cast<Rights>(r)) != 0) return true;
  return false;
}

Principal token_principal(std::string_view token) {
  return {"token", ck::sha256_hex(token), {{"*", kAllRights}}};
}

std::vector<Principal> parse_principals(std::string_view text, const std::string& origin) {
  JsonNode doc;
  try {
    doc = ck::jsonio::parse_json(text, origin);
  } catch (const SpecError& e) {
    throw InvalidArgument(origin + ": " + e.what());
  }
  if (doc.kind != JsonNode::Kind::object)
    throw InvalidArgument(origin + ": expected an object {\"principals\": [...]}, found " +
                          ck::jsonio::describe(doc));
  only_keys(doc, "the document", {"principals"}, origin);
  const JsonNode* list = doc.find("principals");
  if (list == nullptr) throw InvalidArgument(origin + ": missing key `principals`");
  if (list->kind != JsonNode::Kind::array)
    throw InvalidArgument(origin + ": principals: expected an array, found " +
                          ck::jsonio::describe(*list));
  if (list->items.empty())
    throw InvalidArgument(origin + ": principals: empty (no client could call the server)");
  const std::vector<std::string> right_names = names_of_rights();
  std::vector<Principal> out;
  std::set<std::string> names, tokens;
  for (std::size_t i = 0; i < list->items.size(); ++i) {
    const JsonNode& e = list->items[i];
    const std::string at = "principals[" + std::to_string(i) + "]";
    if (e.kind != JsonNode::Kind::object)
      throw InvalidArgument(origin + ": " + at + ": expected an object, found " +
                            ck::jsonio::describe(e));
    only_keys(e, at, {"name", "token_sha256", "rights"}, origin);
    Principal p;
    p.name = member(e, "name", JsonNode::Kind::string, at, origin).text;
    if (p.name.empty()) throw InvalidArgument(origin + ": " + at + ".name: empty");
    if (!names.insert(p.name).second)
      throw InvalidArgument(origin + ": " + at + ".name: `" + p.name +
                            "` names an earlier principal too");
    p.token_sha256 = member(e, "token_sha256", JsonNode::Kind::string, at, origin).text;
    if (!is_hex64(p.token_sha256))
      throw InvalidArgument(origin + ": " + at +
                            ".token_sha256: expected the token's SHA-256 as 64 hex digits "
                            "(sha256sum), found " +
                            std::to_string(p.token_sha256.size()) + " characters");
    for (char& c : p.token_sha256)
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!tokens.insert(p.token_sha256).second)
      throw InvalidArgument(origin + ": " + at +
                            ".token_sha256: an earlier principal has the same token");
    const JsonNode& rights = member(e, "rights", JsonNode::Kind::object, at, origin);
    for (const auto& [task, list_of] : rights.members) {
      const std::string rat = at + ".rights." + task;
      if (task != "*" && !is_task_name(task))
        throw InvalidArgument(origin + ": " + rat +
                              ": not a task name (letters, digits, `_` and `-`, at most 64) "
                              "nor `*`");
      if (list_of.kind != JsonNode::Kind::array)
        throw InvalidArgument(origin + ": " + rat + ": expected an array of rights, found " +
                              ck::jsonio::describe(list_of));
      Rights mask = 0;
      for (std::size_t j = 0; j < list_of.items.size(); ++j) {
        const JsonNode& r = list_of.items[j];
        const std::string jat = rat + "[" + std::to_string(j) + "]";
        if (r.kind != JsonNode::Kind::string)
          throw InvalidArgument(origin + ": " + jat + ": expected a right (a string), found " +
                                ck::jsonio::describe(r));
        const std::optional<Right> named = right_named(r.text);
        if (!named) {
          // The names the routes go by suggest the right they need.
          static const std::vector<ck::Alias> aliases{{"exec", "execute"},
                                                      {"run", "execute"},
                                                      {"eval", "decide"},
                                                      {"evaluate", "decide"},
                                                      {"get", "read"},
                                                      {"rollback", "admin"},
                                                      {"approval", "approve"}};
          const std::string hint = ck::did_you_mean(r.text, right_names, aliases);
          throw InvalidArgument(
              origin + ": " + jat + ": unknown right `" + r.text + "`" +
              (hint.empty() ? " (the rights: read, decide, execute, approve, admin)" : hint));
        }
        mask |= static_cast<Rights>(*named);
      }
      p.rights[task] = mask;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace clampai::server
