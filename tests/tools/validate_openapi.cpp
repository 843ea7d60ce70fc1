// `validate_openapi OPENAPI RECORDS`: checks responses recorded from a running `clampai serve`
// against its OpenAPI 3.1 document (schema/openapi.json). RECORDS is JSON Lines, one response
// each: {"method", "path" (the document's template), "status", "content_type", "body"}. Every
// response must be documented (status and media type) and its body valid against the schema
// (JSON Lines: each line against `x-clampai-line-schema`), and every documented response must
// have been recorded at least once. Exit 0 all good; 1 a problem, one a line; 2 bad input.

// GCC 12 at -O3 reports a false -Wrestrict inside std::string code that valijson inlines (GCC
// bug 105329); the pragma must precede every include to cover those inlined headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A JSON Pointer token: `~` and `/` escaped.
std::string escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// Rewrites every reference in `node` to another file (`NAME#/pointer`) into a reference to
// `#/x-external/NAME/pointer`, and every local one of an embedded file (`#/pointer`) to
// `#/x-external/NAME/pointer`, embedding each file referenced into `root` once.
void inline_refs(json& node, const std::string& self, json& root, const fs::path& dir) {
  if (node.is_array()) {
    for (auto& item : node) inline_refs(item, self, root, dir);
    return;
  }
  if (!node.is_object()) return;
  for (auto& [key, value] : node.items()) {
    if (key == "$ref" && value.is_string()) {
      const std::string ref = value;
      const auto hash = ref.find('#');
      const std::string file = ref.substr(0, hash);
      const std::string pointer = hash == std::string::npos ? "" : ref.substr(hash + 1);
      const std::string name = file.empty() ? self : fs::path(file).filename().string();
      if (name.empty()) continue;  // a local reference of the document itself
      if (!root["x-external"].contains(name)) {
        json doc = json::parse(slurp((dir / name).string()));
        root["x-external"][name] = json::object();  // before recursing: cycles end here
        inline_refs(doc, name, root, dir);
        root["x-external"][name] = std::move(doc);
      }
      value = "#/x-external/" + escape(name) + pointer;
    } else {
      inline_refs(value, self, root, dir);
    }
  }
}

class Validator {
 public:
  explicit Validator(json api) : api_(std::move(api)) {}

  // Problems of `doc` against the schema at `pointer` in the document; empty if valid.
  std::string check(const std::string& pointer, const json& doc) {
    auto& schema = schemas_[pointer];
    if (!schema) {
      schema = std::make_unique<valijson::Schema>();
      // The document itself with a root reference to the schema: its references then resolve
      // within it.
      json root = api_;
      root["$ref"] = "#" + pointer;
      valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
      const valijson::adapters::NlohmannJsonAdapter adapter(root);
      parser.populateSchema(adapter, *schema);
    }
    const valijson::adapters::NlohmannJsonAdapter adapter(doc);
    valijson::Validator validator;
    valijson::ValidationResults results;
    if (validator.validate(*schema, adapter, &results)) return "";
    std::string out;
    valijson::ValidationResults::Error error;
    while (results.popError(error)) {
      std::string where;
      for (const auto& part : error.context) where += part;
      out += "\n    " + where + ": " + error.description;
    }
    return out;
  }

 private:
  json api_;
  std::map<std::string, std::unique_ptr<valijson::Schema>> schemas_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: validate_openapi OPENAPI RECORDS\n";
    return 2;
  }
  json api;
  std::vector<json> records;
  try {
    api = json::parse(slurp(argv[1]));
    std::istringstream lines(slurp(argv[2]));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) records.push_back(json::parse(line));
    }
  } catch (const std::exception& e) {
    std::cerr << "validate_openapi: error: " << e.what() << "\n";
    return 2;
  }
  json embedded = api;
  embedded["x-external"] = json::object();
  try {
    json paths = embedded["paths"];
    json components = embedded["components"];
    inline_refs(paths, "", embedded, fs::path(argv[1]).parent_path());
    inline_refs(components, "", embedded, fs::path(argv[1]).parent_path());
    embedded["paths"] = std::move(paths);
    embedded["components"] = std::move(components);
  } catch (const std::exception& e) {
    std::cerr << "validate_openapi: error: " << e.what() << "\n";
    return 2;
  }
  Validator validator(embedded);
  std::set<std::string> seen;
  int problems = 0;
  const auto problem = [&](const std::string& what) {
    std::cout << what << "\n";
    ++problems;
  };
  for (const json& r : records) {
    const std::string method = r.at("method");
    const std::string path = r.at("path");
    const std::string status = std::to_string(r.at("status").get<int>());
    const std::string ctype = r.at("content_type");
    const std::string where = method + " " + path + " " + status;
    const json* op = nullptr;
    if (api["paths"].contains(path) && api["paths"][path].contains(method))
      op = &api["paths"][path][method];
    if (op == nullptr) {
      // A method the path does not list: 405 with an Error (the document's info says so).
      if (api["paths"].contains(path) && status == "405") {
        const std::string bad = validator.check("/components/schemas/Error",
                                                json::parse(r.at("body").get<std::string>()));
        if (!bad.empty()) problem(where + ": the body does not validate:" + bad);
        continue;
      }
      problem(where + ": no such operation in the document");
      continue;
    }
    if (!(*op)["responses"].contains(status)) {
      problem(where + ": response not documented");
      continue;
    }
    seen.insert(where);
    const json& content = (*op)["responses"][status]["content"];
    const std::string base = ctype.substr(0, ctype.find(';'));
    std::string media;
    for (const auto& [name, v] : content.items()) {
      if (name == ctype || name.substr(0, name.find(';')) == base) media = name;
    }
    if (media.empty()) {
      problem(where + ": content type `" + ctype + "` not documented");
      continue;
    }
    const std::string pointer = "/paths/" + escape(path) + "/" + method + "/responses/" + status +
                                "/content/" + escape(media);
    try {
      if (base == "application/json") {
        const std::string bad =
            validator.check(pointer + "/schema", json::parse(r.at("body").get<std::string>()));
        if (!bad.empty()) problem(where + ": the body does not validate:" + bad);
      } else if (base == "application/jsonl") {
        std::istringstream lines(r.at("body").get<std::string>());
        std::size_t n = 0;
        for (std::string line; std::getline(lines, line); ++n) {
          const std::string bad =
              validator.check(pointer + "/x-clampai-line-schema", json::parse(line));
          if (!bad.empty()) problem(where + ": line " + std::to_string(n + 1) + ":" + bad);
        }
      }
    } catch (const std::exception& e) {
      problem(where + ": " + e.what());
    }
  }
  for (const auto& [path, item] : api["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (!op.is_object() || !op.contains("responses")) continue;
      for (const auto& [status, response] : op["responses"].items()) {
        const std::string where = method + " " + path + " " + status;
        if (seen.count(where) == 0) problem(where + ": documented but never exercised");
      }
    }
  }
  std::cout << records.size() << " responses checked, " << seen.size() << " kinds, " << problems
            << " problem(s)\n";
  return problems == 0 ? 0 : 1;
}
