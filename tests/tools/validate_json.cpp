// `validate_json SCHEMA FILE`: validates a JSON file against a JSON Schema, for the CLI tests.
// Exit 0 valid; 1 invalid, one error a line (path: message); 2 usage or unreadable input.

// GCC 12 at -O3 reports a false -Wrestrict inside std::string code that valijson inlines (GCC
// bug 105329); the pragma must precede every include to cover those inlined headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <exception>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace {

using nlohmann::json;

constexpr int kValid = 0;
constexpr int kInvalid = 1;
constexpr int kBadInput = 2;

// The parsed document, or nothing after printing why it cannot be read.
std::optional<json> read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "validate_json: error: " << path << ": cannot read\n";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    std::cerr << "validate_json: error: " << path << ": malformed JSON: " << e.what() << "\n";
    return std::nullopt;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: validate_json SCHEMA FILE\n";
    return kBadInput;
  }
  const std::string schema_path = argv[1];
  const std::string file_path = argv[2];
  const std::optional<json> schema_doc = read_json(schema_path);
  const std::optional<json> doc = read_json(file_path);
  if (!schema_doc || !doc) return kBadInput;

  valijson::Schema schema;
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    const valijson::adapters::NlohmannJsonAdapter adapter(*schema_doc);
    parser.populateSchema(adapter, schema);
  } catch (const std::exception& e) {
    std::cerr << "validate_json: error: " << schema_path << ": not a usable schema: " << e.what()
              << "\n";
    return kBadInput;
  }

  const valijson::adapters::NlohmannJsonAdapter adapter(*doc);
  valijson::Validator validator;
  valijson::ValidationResults results;
  if (validator.validate(schema, adapter, &results)) return kValid;
  std::cout << file_path << ": does not validate against " << schema_path << "\n";
  valijson::ValidationResults::Error error;
  while (results.popError(error)) {
    std::string where;
    for (const auto& part : error.context) where += part;
    std::cout << "  " << where << ": " << error.description << "\n";
  }
  return kInvalid;
}
