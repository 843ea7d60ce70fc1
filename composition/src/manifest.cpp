// Composition manifests: JSON -> Manifest. Two passes: first every manifest reachable from the
// root is read and the graph of references between its definitions (manifests and named
// composites) is checked for cycles with Boost.Graph; then the tree is expanded.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <filesystem>
#include <map>
#include <set>

#include "clampai/composition/compose.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/json.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/kernel/suggest.hpp"

namespace clampai::composition {

using kernel::jsonio::at_index;
using kernel::jsonio::expect_kind;
using kernel::jsonio::join;
using kernel::jsonio::JsonNode;
using Kind = kernel::jsonio::JsonNode::Kind;

std::string_view to_string(NodeKind k) {
  static constexpr std::string_view kNames[] = {
      "task", "sequential", "parallel", "conditional", "repeat", "group"};
  return kNames[static_cast<int>(k)];
}

namespace {

namespace fs = std::filesystem;

// A manifest file as read in the first pass.
struct File {
  std::string path;  // as resolved
  JsonNode root;
  std::string name;
  std::vector<std::pair<std::string, std::string>> tasks;  // name -> resolved spec path
  std::map<std::string, const JsonNode*> composites;
  std::size_t vertex = 0;  // the manifest's vertex in the reference graph
  std::map<std::string, std::size_t> composite_vertex;
  std::map<std::size_t, std::set<std::string>> task_refs;  // vertex -> the tasks it names
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

// The path of `relative` as named from the manifest `from_file` ("" for the command line).
// Kept in its lexical form for messages unless that leads elsewhere than the OS goes: `..`
// after a symbolic link to a directory climbs out of the link's target, so the path is then
// the OS's (symbolic links resolved).
std::string resolve(const std::string& from_file, const std::string& relative) {
  const fs::path p(relative);
  const fs::path joined = p.is_absolute() ? p : fs::path(from_file).parent_path() / p;
  const fs::path lexical = joined.lexically_normal();
  std::error_code e1;
  std::error_code e2;
  const fs::path real = fs::weakly_canonical(joined, e1);
  if (!e1 && fs::weakly_canonical(lexical, e2) != real) return real.string();
  return lexical.string();
}

// Manifests may include manifests this deep; checked before each include is read, so a long
// chain of includes is an error rather than a stack overflow.
constexpr std::size_t kMaxIncludeDepth = 100;

// Records the first back edge: a cycle in the reference graph.
struct CycleFinder : boost::default_dfs_visitor {
  std::vector<std::size_t>* parent;
  std::optional<std::pair<std::size_t, std::size_t>>* found;
  void tree_edge(Graph::edge_descriptor e, const Graph& g) const {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
  }
  void back_edge(Graph::edge_descriptor e, const Graph& g) const {
    if (!*found) *found = std::make_pair(boost::source(e, g), boost::target(e, g));
  }
};

class Loader {
 public:
  Manifest load(const std::string& path) {
    const std::string root = resolve("", path);
    read(root, "");
    check_cycles();
    check_unused();
    load_tasks();
    build_universe();
    Manifest& m = out_;
    m.file = root;
    m.root = expand_group(files_.at(root));
    return std::move(out_);
  }

 private:
  std::map<std::string, File> files_;  // by resolved path
  std::vector<std::string> order_;     // files in the order read
  Graph graph_;
  std::vector<std::string> vertex_names_;
  std::map<std::string, std::size_t> task_index_;   // `file#name` -> index in out_.tasks
  std::map<std::string, std::size_t> group_index_;  // file -> index in out_.groups
  Manifest out_;
  std::size_t include_depth_ = 0;  // manifests being read, one inside the other

  [[noreturn]] static void fail(const File& f, const std::string& path, const std::string& what) {
    throw SpecError(path.empty() ? f.path : f.path + ": " + path, what);
  }

  std::size_t add_vertex(std::string name) {
    vertex_names_.push_back(std::move(name));
    return boost::add_vertex(graph_);
  }

  // ---- first pass ----

  void read(const std::string& path, const std::string& included_from) {
    if (files_.count(path) > 0) return;
    std::string text;
    try {
      text = kernel::read_text_file(path);
    } catch (const Error& e) {
      throw SpecError(included_from, e.what());
    }
    File& f = files_[path];
    order_.push_back(path);
    f.path = path;
    try {
      f.root = kernel::jsonio::parse_json(text, "manifest");
    } catch (const SpecError& e) {
      throw SpecError(path + (e.path().empty() ? "" : ": " + e.path()),
                      std::string(e.what()).substr(e.path().empty() ? 0 : e.path().size() + 2));
    }
    try {
      read_top(f);
    } catch (const SpecError& e) {
      // Errors located in this file, or in a manifest it includes, already name their file.
      if (e.path().rfind(path, 0) == 0 || files_.count(e.path().substr(0, e.path().find(": "))))
        throw;
      throw SpecError(path + (e.path().empty() ? "" : ": " + e.path()),
                      std::string(e.what()).substr(e.path().empty() ? 0 : e.path().size() + 2));
    }
  }

  void read_top(File& f) {
    const JsonNode& r = f.root;
    expect_kind(r, Kind::object, "");
    kernel::jsonio::allow_keys(r,
                               "",
                               {"$schema",
                                "name",
                                "description",
                                "tasks",
                                "composites",
                                "compose",
                                "budget",
                                "interface"});
    f.name = kernel::jsonio::get_string(r, "", "name");
    if (r.find("name") == nullptr) throw SpecError("", "missing `name`");
    check_name(f.name, "name");
    // The root's tasks keep their own names; an included manifest's are qualified by its name.
    for (const auto& [other_path, other] : files_) {
      if (f.path != order_.front() && other_path != order_.front() && other_path != f.path &&
          other.name == f.name)
        throw SpecError("name",
                        "`" + f.name + "` also names `" + other_path +
                            "`: the manifests of one composition need distinct names (their tasks "
                            "are called `" +
                            f.name + ".<task>`)");
    }
    (void)kernel::jsonio::get_string(r, "", "description");
    const JsonNode& tasks = kernel::jsonio::required(r, "", "tasks");
    expect_kind(tasks, Kind::object, "tasks");
    if (tasks.members.empty()) throw SpecError("tasks", "a manifest needs at least one task");
    for (const auto& [name, file] : tasks.members) {
      expect_kind(file, Kind::string, join("tasks", name));
      check_name(name, join("tasks", name));
      f.tasks.emplace_back(name, resolve(f.path, file.text));
    }
    f.vertex = add_vertex("manifest `" + f.name + "` (" + f.path + ")");
    if (const JsonNode* cs = r.find("composites")) {
      expect_kind(*cs, Kind::object, "composites");
      for (const auto& [name, node] : cs->members) {
        check_name(name, join("composites", name));
        if (task_named(f, name))
          throw SpecError(join("composites", name),
                          "`" + name + "` names both a task and a composite");
        f.composites.emplace(name, &node);
        f.composite_vertex.emplace(name, add_vertex("composite `" + name + "`"));
      }
      for (const auto& [name, node] : cs->members)
        scan(f, node, join("composites", name), f.composite_vertex.at(name));
    }
    scan(f, kernel::jsonio::required(r, "", "compose"), "compose", f.vertex);
    if (const JsonNode* b = r.find("budget")) {
      const kernel::Decimal d = kernel::jsonio::get_decimal(*b, "budget");
      if (d.units < 0) throw SpecError("budget", "must not be negative, got " + b->text);
    }
    if (const JsonNode* itf = r.find("interface")) {
      expect_kind(*itf, Kind::object, "interface");
      kernel::jsonio::allow_keys(
          *itf, "interface", {"description", "assumes", "guarantees", "forbidden"});
      (void)kernel::jsonio::get_string(*itf, "interface", "description");
      for (const char* key : {"assumes", "guarantees"}) {
        if (const JsonNode* e = itf->find(key)) {
          expect_kind(*e, Kind::string, join("interface", key));
          if (e->text.empty()) throw SpecError(join("interface", key), "empty expression");
        }
      }
      if (const JsonNode* fb = itf->find("forbidden")) {
        expect_kind(*fb, Kind::array, "interface.forbidden");
        for (std::size_t i = 0; i < fb->items.size(); ++i)
          expect_kind(fb->items[i], Kind::string, at_index("interface.forbidden", i));
      }
    }
  }

  static void check_name(const std::string& name, const std::string& path) {
    if (name.empty()) throw SpecError(path, "an empty name");
    for (char c : name) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
        throw SpecError(path, "`" + name + "`: names use letters, digits, `_` and `-`");
    }
  }

  static bool task_named(const File& f, const std::string& name) {
    for (const auto& [n, _] : f.tasks) {
      if (n == name) return true;
    }
    return false;
  }

  // Checks the structure of a node and adds the edges of its references.
  void scan(File& f, const JsonNode& n, const std::string& path, std::size_t from) {
    if (n.kind == Kind::string) {
      if (task_named(f, n.text)) {
        f.task_refs[from].insert(n.text);
        return;
      }
      if (auto it = f.composite_vertex.find(n.text); it != f.composite_vertex.end()) {
        boost::add_edge(from, it->second, graph_);
        return;
      }
      std::vector<std::string> names;
      for (const auto& [name, _] : f.tasks) names.push_back(name);
      for (const auto& [name, _] : f.composite_vertex) names.push_back(name);
      throw SpecError(
          path, "unknown task or composite `" + n.text + "`" + kernel::did_you_mean(n.text, names));
    }
    if (n.kind != Kind::object || n.members.size() != 1) {
      throw SpecError(path,
                      "expected a task name or an object with one key (`sequential`, `parallel`, "
                      "`conditional`, `repeat` or `manifest`), found " +
                          (n.kind == Kind::object ? std::to_string(n.members.size()) + " keys"
                                                  : kernel::jsonio::describe(n)));
    }
    const auto& [key, body] = n.members.front();
    const std::string p = join(path, key);
    if (key == "sequential" || key == "parallel") {
      expect_kind(body, Kind::array, p);
      const std::size_t least = key == "parallel" ? 2 : 1;
      if (body.items.size() < least)
        throw SpecError(p,
                        "`" + key + "` needs at least " + std::to_string(least) + " item" +
                            (least > 1 ? "s" : ""));
      for (std::size_t i = 0; i < body.items.size(); ++i)
        scan(f, body.items[i], at_index(p, i), from);
    } else if (key == "conditional") {
      expect_kind(body, Kind::object, p);
      kernel::jsonio::allow_keys(body, p, {"if", "then", "else"});
      const JsonNode& guard = kernel::jsonio::required(body, p, "if");
      expect_kind(guard, Kind::string, join(p, "if"));
      if (guard.text.empty()) throw SpecError(join(p, "if"), "empty expression");
      scan(f, kernel::jsonio::required(body, p, "then"), join(p, "then"), from);
      if (const JsonNode* e = body.find("else")) scan(f, *e, join(p, "else"), from);
    } else if (key == "repeat") {
      expect_kind(body, Kind::object, p);
      kernel::jsonio::allow_keys(body, p, {"times", "body"});
      const std::int64_t times =
          kernel::jsonio::get_count(kernel::jsonio::required(body, p, "times"), join(p, "times"));
      if (times < 1) throw SpecError(join(p, "times"), "must be at least 1");
      scan(f, kernel::jsonio::required(body, p, "body"), join(p, "body"), from);
    } else if (key == "manifest") {
      expect_kind(body, Kind::string, p);
      const std::string target = resolve(f.path, body.text);
      if (include_depth_ >= kMaxIncludeDepth && files_.count(target) == 0) {
        throw SpecError(p,
                        "manifests include each other more than " +
                            std::to_string(kMaxIncludeDepth) + " levels deep");
      }
      ++include_depth_;
      read(target, f.path + ": " + p);
      --include_depth_;
      boost::add_edge(from, files_.at(target).vertex, graph_);
    } else {
      throw SpecError(p,
                      "unknown composition `" + key +
                          "` (expected one of: sequential, parallel, conditional, repeat, "
                          "manifest)");
    }
  }

  // A task or composite that `compose` never reaches would still take part in the interference
  // checks (or silently be ignored): either way a manifest that declares it is a mistake.
  void check_unused() const {
    for (const std::string& path : order_) {
      const File& f = files_.at(path);
      std::set<std::size_t> reached{f.vertex};
      std::vector<std::size_t> todo{f.vertex};
      while (!todo.empty()) {
        const std::size_t v = todo.back();
        todo.pop_back();
        for (auto [it, end] = boost::adjacent_vertices(v, graph_); it != end; ++it) {
          if (reached.insert(*it).second) todo.push_back(*it);
        }
      }
      std::set<std::string> used;
      for (const auto& [v, names] : f.task_refs)
        if (reached.count(v) > 0) used.insert(names.begin(), names.end());
      for (const auto& [name, vertex] : f.composite_vertex) {
        if (reached.count(vertex) == 0)
          fail(f,
               join("composites", name),
               "composite `" + name + "` is declared but `compose` never uses it");
      }
      for (const auto& [name, spec] : f.tasks) {
        if (used.count(name) == 0)
          fail(f,
               join("tasks", name),
               "task `" + name + "` is declared but `compose` never uses it");
      }
    }
  }

  void check_cycles() {
    std::vector<std::size_t> parent(boost::num_vertices(graph_));
    for (std::size_t v = 0; v < parent.size(); ++v) parent[v] = v;
    std::optional<std::pair<std::size_t, std::size_t>> found;
    CycleFinder finder;
    finder.parent = &parent;
    finder.found = &found;
    boost::depth_first_search(graph_, boost::visitor(finder));
    if (!found) return;
    // The back edge u -> v closes the cycle v -> ... -> u -> v along the DFS tree.
    std::vector<std::size_t> cycle{found->first};
    for (std::size_t v = found->first; v != found->second && parent[v] != v;) {
      v = parent[v];
      cycle.push_back(v);
    }
    std::string names;
    for (auto it = cycle.rbegin(); it != cycle.rend(); ++it) names += vertex_names_[*it] + " -> ";
    names += vertex_names_[found->second];
    throw SpecError(files_.at(order_.front()).path,
                    "a cycle of references (only `repeat` may loop): " + names);
  }

  // ---- second pass ----

  void load_tasks() {
    std::map<std::string, std::shared_ptr<const kernel::TaskModel>> models;  // by spec path
    for (const std::string& path : order_) {
      const File& f = files_.at(path);
      for (const auto& [name, spec] : f.tasks) {
        auto& model = models[spec];
        if (!model) {
          std::string text;
          try {
            text = kernel::read_text_file(spec);
          } catch (const Error& e) {
            throw SpecError(f.path + ": " + join("tasks", name), e.what());
          }
          try {
            model = kernel::load_spec(text);
          } catch (const SpecError& e) {
            // Located in the spec file, whose task the manifest names.
            const std::string what(e.what());
            throw SpecError(spec + (e.path().empty() ? "" : ": " + e.path()),
                            what.substr(e.path().empty() ? 0 : e.path().size() + 2) +
                                " (the spec of task `" + name + "` in " + f.path + ")");
          }
        }
        TaskRef t;
        t.name = path == order_.front() ? name : f.name + "." + name;
        t.file = spec;
        t.manifest = f.path;
        t.loc = {f.root.find("tasks")->find(name)->line, f.root.find("tasks")->find(name)->column};
        t.model = model;
        task_index_.emplace(path + "#" + name, out_.tasks.size());
        out_.tasks.push_back(std::move(t));
      }
    }
  }

  // Every variable of every task; a shared variable must be declared alike everywhere.
  void build_universe() {
    kernel::TaskDecl decl;
    decl.name = "composition";
    decl.budget.total = kernel::Decimal{1, 0};
    decl.budget.min_action_cost = kernel::Decimal{1, 0};
    std::map<std::string, std::pair<const kernel::Variable*, const TaskRef*>> seen;
    for (const TaskRef& t : out_.tasks) {
      for (const kernel::Variable& v : t.model->variables) {
        auto [it, inserted] = seen.emplace(v.name, std::make_pair(&v, &t));
        if (inserted) {
          decl.variables.push_back(kernel::VariableDecl{
              v.name, v.type, v.initial, v.min, v.max, v.max_length, v.optional, {}});
          continue;
        }
        const kernel::Variable& w = *it->second.first;
        std::string diff;
        if (!(w.type == v.type)) {
          diff = "type " + w.type.to_string() + " vs " + v.type.to_string();
        } else if (w.min != v.min || w.max != v.max) {
          auto show = [](const std::optional<kernel::Decimal>& d) {
            return d ? d->to_string() : std::string("none");
          };
          diff = "bounds [" + show(w.min) + ", " + show(w.max) + "] vs [" + show(v.min) + ", " +
                 show(v.max) + "]";
        } else if (w.max_length != v.max_length || w.optional != v.optional) {
          diff = "max_length or optional";
        }
        if (!diff.empty()) {
          throw SpecError(t.manifest + ": " + join("tasks", t.name),
                          "shared variable `" + v.name + "` is declared differently in `" +
                              it->second.second->file + "` and `" + t.file + "` (" + diff +
                              "): a shared variable needs one type and one set of bounds");
        }
      }
    }
    out_.universe = kernel::build_model(decl);
  }

  kernel::ExprPtr parse(const File& f, const std::string& text, const std::string& path) {
    kernel::ExprPtr e;
    try {
      e = kernel::parse_expression(text, out_.universe->scope(), path);
    } catch (const SpecError& err) {
      throw SpecError(f.path + ": " + err.path(),
                      std::string(err.what()).substr(err.path().size() + 2));
    }
    if (e->type.kind() != kernel::Type::Kind::boolean)
      fail(f, path, "expected a bool expression, found " + e->type.to_string());
    return e;
  }

  Node expand_group(const File& f) {
    Node n;
    n.kind = NodeKind::group;
    n.path = f.path;
    if (auto it = group_index_.find(f.path); it != group_index_.end()) {
      n.group = it->second;  // a manifest included more than once: one contract, many uses
    } else {
      n.group = add_group(f);
    }
    n.children.push_back(expand(f, kernel::jsonio::required(f.root, "", "compose"), "compose"));
    return n;
  }

  std::size_t add_group(const File& f) {
    Group g;
    g.name = f.name;
    g.file = f.path;
    g.loc = {f.root.line, f.root.column};
    if (const JsonNode* b = f.root.find("budget"))
      g.budget = kernel::jsonio::get_decimal(*b, "budget");
    if (const JsonNode* itf = f.root.find("interface")) {
      if (const JsonNode* a = itf->find("assumes"))
        g.assumes = parse(f, a->text, "interface.assumes");
      if (const JsonNode* gu = itf->find("guarantees"))
        g.guarantees = parse(f, gu->text, "interface.guarantees");
      if (const JsonNode* fb = itf->find("forbidden")) {
        for (std::size_t i = 0; i < fb->items.size(); ++i) {
          if (!out_.universe->schema->find(fb->items[i].text))
            fail(f,
                 at_index("interface.forbidden", i),
                 "unknown variable `" + fb->items[i].text + "` (no task declares it)");
          g.forbidden.push_back(fb->items[i].text);
        }
      }
    }
    const std::size_t index = out_.groups.size();
    group_index_.emplace(f.path, index);
    out_.groups.push_back(std::move(g));
    return index;
  }

  // Limits of the expanded tree: a composite used many times is copied at each use, so a few
  // lines can describe an exponential tree, and the checks recurse along its depth.
  static constexpr std::size_t kMaxDepth = 1000;
  static constexpr std::size_t kMaxNodes = 100000;
  std::size_t depth_ = 0;
  std::size_t nodes_ = 0;

  Node expand(const File& f, const JsonNode& reference, const std::string& reference_path) {
    // The name of a composite stands for its definition (check_cycles excluded loops).
    const JsonNode* definition = &reference;
    std::string path = reference_path;
    while (definition->kind == Kind::string &&
           task_index_.count(f.path + "#" + definition->text) == 0) {
      path = join("composites", definition->text);
      definition = f.composites.at(definition->text);
    }
    const JsonNode& j = *definition;
    struct Level {
      std::size_t& d;
      explicit Level(std::size_t& depth) : d(++depth) {}
      ~Level() { --d; }
      Level(const Level&) = delete;
      Level& operator=(const Level&) = delete;
    } level(depth_);
    if (depth_ > kMaxDepth)
      fail(f, path, "the composition nests deeper than " + std::to_string(kMaxDepth) + " levels");
    if (++nodes_ > kMaxNodes) {
      fail(f,
           path,
           "the composition expands to more than " + std::to_string(kMaxNodes) +
               " nodes (each use of a composite or manifest copies it)");
    }
    Node n;
    n.path = f.path + ": " + path;
    n.loc = {j.line, j.column};
    if (j.kind == Kind::string) {
      n.kind = NodeKind::task;
      n.task = task_index_.at(f.path + "#" + j.text);
      return n;
    }
    const auto& [key, body] = j.members.front();
    const std::string p = join(path, key);
    if (key == "sequential" || key == "parallel") {
      n.kind = key == "sequential" ? NodeKind::sequential : NodeKind::parallel;
      for (std::size_t i = 0; i < body.items.size(); ++i)
        n.children.push_back(expand(f, body.items[i], at_index(p, i)));
    } else if (key == "conditional") {
      n.kind = NodeKind::conditional;
      n.guard = parse(f, body.find("if")->text, join(p, "if"));
      n.children.push_back(expand(f, *body.find("then"), join(p, "then")));
      if (const JsonNode* e = body.find("else"))
        n.children.push_back(expand(f, *e, join(p, "else")));
    } else if (key == "repeat") {
      n.kind = NodeKind::repeat;
      n.times = kernel::jsonio::get_count(*body.find("times"), join(p, "times"));
      n.children.push_back(expand(f, *body.find("body"), join(p, "body")));
    } else {  // manifest
      Node g = expand_group(files_.at(resolve(f.path, body.text)));
      g.path = n.path;
      g.loc = n.loc;
      return g;
    }
    return n;
  }
};

}  // namespace

Manifest load_manifest(const std::string& path) { return Loader{}.load(path); }

}  // namespace clampai::composition
