// Request bodies and answer parsing for the Anthropic Messages and OpenAI Chat Completions APIs.
// Parsing is strict about what it uses (a wrong type is `unparsable`) and ignores the rest, so a
// new field in an answer never breaks an adapter.
#include "http_vendors.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace clampai::agent::detail {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxWireName = 64;

bool is_wire_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxWireName) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

[[noreturn]] void unparsable(const std::string& what) {
  throw LlmError(LlmErrorKind::unparsable, what);
}

// A tool's parameters must be an object schema for both APIs; an empty one means "no parameters".
json object_schema(const json& schema) {
  if (!schema.is_object() || schema.empty())
    return json{{"type", "object"}, {"properties", json::object()}};
  return schema;
}

std::int64_t count(const json& usage, const char* field) {
  const auto it = usage.find(field);
  if (it == usage.end() || !it->is_number_integer()) return 0;
  const auto n = it->get<std::int64_t>();
  return n < 0 ? 0 : n;
}

// The deepest nesting of arrays and objects, counted outside strings, stopping past `limit`.
bool nests_deeper_than(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

json arguments_object(const json& arguments, const std::string& where) {
  if (arguments.is_object()) return arguments;  // some local servers send an object
  if (arguments.is_null()) return json::object();
  if (!arguments.is_string()) unparsable(where + " is neither a JSON string nor an object");
  const auto& text = arguments.get_ref<const std::string&>();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  bool too_deep = false;
  json parsed = parse_answer(text, too_deep);
  if (too_deep)
    unparsable(where + " nests deeper than " + std::to_string(kMaxAnswerDepth) + " levels");
  if (parsed.is_discarded()) unparsable(where + " is not JSON");
  if (!parsed.is_object()) unparsable(where + " is not a JSON object");
  return parsed;
}

}  // namespace

json parse_answer(std::string_view text, bool& too_deep) {
  too_deep = nests_deeper_than(text, kMaxAnswerDepth);
  if (too_deep) return json(json::value_t::discarded);
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::string ToolNames::original(const std::string& wire_name) const {
  const auto it = to_original.find(wire_name);
  return it == to_original.end() ? wire_name : it->second;
}

ToolNames make_tool_names(const std::vector<ToolSpec>& tools) {
  ToolNames names;
  std::set<std::string> used;
  for (const auto& t : tools)
    if (is_wire_name(t.name)) used.insert(t.name);
  std::set<std::string> taken;  // names already given out, so a duplicate id gets an alias
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string& name = tools[i].name;
    if (is_wire_name(name) && taken.insert(name).second) {
      names.wire.push_back(name);
      continue;
    }
    std::string base;
    for (const char c : name.substr(0, 48)) {
      const std::string one(1, c);
      base += is_wire_name(one) ? c : '_';
    }
    if (base.empty()) base = "tool";
    std::string alias = base + "_" + std::to_string(i);
    for (int k = 1; used.count(alias) != 0 || taken.count(alias) != 0; ++k)
      alias = base + "_" + std::to_string(i) + "_" + std::to_string(k);
    taken.insert(alias);
    names.to_original.emplace(alias, name);
    names.wire.push_back(alias);
  }
  return names;
}

json anthropic_body(const LlmRequest& request, const std::string& model, const ToolNames& names) {
  json body{{"model", model},
            {"max_tokens", request.max_tokens},
            {"messages", json::array({json{{"role", "user"}, {"content", request.prompt}}})}};
  if (!request.system.empty()) body["system"] = request.system;
  if (request.temperature) body["temperature"] = *request.temperature;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (std::size_t i = 0; i < request.tools.size(); ++i) {
      const auto& t = request.tools[i];
      json tool{{"name", names.wire[i]},
                {"input_schema", object_schema(json::parse(t.input_schema))}};
      if (!t.description.empty()) tool["description"] = t.description;
      tools.push_back(std::move(tool));
    }
    body["tools"] = std::move(tools);
    body["tool_choice"] = json{{"type", request.require_tool_call ? "any" : "auto"}};
  }
  return body;
}

json openai_body(const LlmRequest& request,
                 const std::string& model,
                 const ToolNames& names,
                 const std::string& max_tokens_field) {
  json messages = json::array();
  if (!request.system.empty())
    messages.push_back(json{{"role", "system"}, {"content", request.system}});
  messages.push_back(json{{"role", "user"}, {"content", request.prompt}});
  json body{{"model", model}, {"messages", std::move(messages)}};
  body[max_tokens_field] = request.max_tokens;
  if (request.temperature) body["temperature"] = *request.temperature;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (std::size_t i = 0; i < request.tools.size(); ++i) {
      const auto& t = request.tools[i];
      json function{{"name", names.wire[i]},
                    {"parameters", object_schema(json::parse(t.input_schema))}};
      if (!t.description.empty()) function["description"] = t.description;
      tools.push_back(json{{"type", "function"}, {"function", std::move(function)}});
    }
    body["tools"] = std::move(tools);
    body["tool_choice"] = request.require_tool_call ? "required" : "auto";
  }
  return body;
}

std::string openai_max_tokens_field(const std::string& base_url) {
  const std::string host = "https://api.openai.com";
  const bool public_api = base_url.rfind(host, 0) == 0 &&
                          (base_url.size() == host.size() || base_url[host.size()] == '/');
  return public_api ? "max_completion_tokens" : "max_tokens";
}

LlmResponse parse_anthropic(const json& answer, const ToolNames& names) {
  if (!answer.is_object()) unparsable("the answer is not a JSON object");
  const auto content = answer.find("content");
  if (content == answer.end() || !content->is_array())
    unparsable("the answer has no `content` array");
  LlmResponse response;
  for (std::size_t i = 0; i < content->size(); ++i) {
    const json& block = (*content)[i];
    const std::string where = "`content[" + std::to_string(i) + "]`";
    if (!block.is_object()) unparsable(where + " is not an object");
    const auto type = block.find("type");
    if (type == block.end() || !type->is_string()) unparsable(where + " has no `type`");
    if (*type == "text") {
      const auto text = block.find("text");
      if (text == block.end() || !text->is_string()) unparsable(where + " has no `text` string");
      response.text += text->get<std::string>();
    } else if (*type == "tool_use" && !response.tool_call) {
      const auto name = block.find("name");
      if (name == block.end() || !name->is_string()) unparsable(where + " has no `name` string");
      const auto input = block.find("input");
      json arguments = json::object();
      if (input != block.end() && !input->is_null()) {
        if (!input->is_object()) unparsable(where + ": `input` is not an object");
        arguments = *input;
      }
      response.tool_call = ToolCall{names.original(name->get<std::string>()), arguments.dump()};
    }  // other blocks (thinking, a second tool_use) are not the answer
  }
  if (const auto usage = answer.find("usage"); usage != answer.end() && usage->is_object()) {
    // Cached prompt tokens are reported apart from input_tokens; all of them were read.
    response.usage.input_tokens = count(*usage, "input_tokens") +
                                  count(*usage, "cache_creation_input_tokens") +
                                  count(*usage, "cache_read_input_tokens");
    response.usage.output_tokens = count(*usage, "output_tokens");
  }
  return response;
}

LlmResponse parse_openai(const json& answer, const ToolNames& names) {
  if (!answer.is_object()) unparsable("the answer is not a JSON object");
  const auto choices = answer.find("choices");
  if (choices == answer.end() || !choices->is_array() || choices->empty())
    unparsable("the answer has no `choices`");
  const json& choice = choices->front();
  if (!choice.is_object()) unparsable("`choices[0]` is not an object");
  const auto message = choice.find("message");
  if (message == choice.end() || !message->is_object())
    unparsable("`choices[0]` has no `message` object");
  LlmResponse response;
  if (const auto content = message->find("content"); content != message->end()) {
    if (content->is_string())
      response.text = content->get<std::string>();
    else if (!content->is_null())
      unparsable("`choices[0].message.content` is not a string");
  }
  if (const auto refusal = message->find("refusal");
      response.text.empty() && refusal != message->end() && refusal->is_string())
    response.text = refusal->get<std::string>();
  if (const auto calls = message->find("tool_calls");
      calls != message->end() && !calls->is_null()) {
    if (!calls->is_array()) unparsable("`choices[0].message.tool_calls` is not an array");
    if (!calls->empty()) {
      const json& call = calls->front();
      const std::string where = "`choices[0].message.tool_calls[0]";
      if (!call.is_object()) unparsable(where + "` is not an object");
      const auto function = call.find("function");
      if (function == call.end() || !function->is_object())
        unparsable(where + "` has no `function` object");
      const auto name = function->find("name");
      if (name == function->end() || !name->is_string())
        unparsable(where + ".function` has no `name` string");
      const auto arguments = function->find("arguments");
      json args = arguments == function->end()
                      ? json::object()
                      : arguments_object(*arguments, where + ".function.arguments`");
      response.tool_call = ToolCall{names.original(name->get<std::string>()), args.dump()};
    }
  }
  if (const auto usage = answer.find("usage"); usage != answer.end() && usage->is_object()) {
    response.usage.input_tokens = count(*usage, "prompt_tokens");
    response.usage.output_tokens = count(*usage, "completion_tokens");
  }
  return response;
}

std::string api_error_message(const json& answer) {
  if (!answer.is_object()) return "";
  const auto error = answer.find("error");
  if (error == answer.end()) return "";
  if (error->is_string()) return error->get<std::string>();  // some local servers
  if (!error->is_object()) return "";
  std::string out;
  if (const auto type = error->find("type"); type != error->end() && type->is_string())
    out = type->get<std::string>();
  if (const auto msg = error->find("message"); msg != error->end() && msg->is_string())
    out += (out.empty() ? "" : ": ") + msg->get<std::string>();
  return out;
}

}  // namespace clampai::agent::detail
