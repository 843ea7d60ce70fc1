// JSON-RPC 2.0 over stdio for `clampai mcp` and `clampai gateway` (jsonrpc.hpp).
#include "jsonrpc.hpp"

#include <algorithm>
#include <cstring>
#include <istream>

#include "clampai/kernel/error.hpp"
#include "clampai/server/mcp.hpp"
#include "json_out.hpp"

namespace clampai::server::jsonrpc {

namespace ck = clampai::kernel;
using ck::jsonio::JsonNode;

bool valid_id(const JsonNode* id) {
  return id == nullptr || id->kind == JsonNode::Kind::string || id->kind == JsonNode::Kind::null ||
         (id->kind == JsonNode::Kind::number && id->integral);
}

std::string id_json(const JsonNode* id) {
  if (id == nullptr || id->kind == JsonNode::Kind::null) return "null";
  if (id->kind == JsonNode::Kind::number) return id->text;
  std::string out;
  append_json_string(out, id->text);
  return out;
}

std::string error_message(const std::string& id, int code, std::string_view message) {
  JsonOut j;
  j.begin_object().key("jsonrpc").value("2.0").key("id").raw(id).key("error").begin_object();
  j.key("code").value(static_cast<std::int64_t>(code)).key("message").value(message);
  j.end_object().end_object();
  return j.take();
}

std::string result_message(const std::string& id, std::string_view result) {
  JsonOut j;
  j.begin_object().key("jsonrpc").value("2.0").key("id").raw(id).key("result").raw(result);
  j.end_object();
  return j.take();
}

std::string tool_result(std::string_view text, std::string_view structured, bool is_error) {
  JsonOut j;
  j.begin_object().key("content").begin_array().begin_object();
  j.key("type").value("text").key("text").value(text).end_object().end_array();
  // The reports of lookahead and repair are indented: one line on the wire all the same.
  j.key("structuredContent").raw(compact_json(structured)).key("isError").value(is_error);
  j.end_object();
  return j.take();
}

std::string_view protocol_version(const JsonNode* object, std::string_view fallback) {
  const JsonNode* v = object != nullptr ? object->find("protocolVersion") : nullptr;
  if (v == nullptr || v->kind != JsonNode::Kind::string) return fallback;
  for (const std::string_view known : mcp_protocol_versions) {
    if (v->text == known) return known;
  }
  return fallback;
}

void append_json(std::string& out, const JsonNode& n) {
  switch (n.kind) {
    case JsonNode::Kind::null:
      out += "null";
      return;
    case JsonNode::Kind::boolean:
      out += n.boolean ? "true" : "false";
      return;
    case JsonNode::Kind::number:
      out += n.text;
      return;
    case JsonNode::Kind::string:
      append_json_string(out, n.text);
      return;
    case JsonNode::Kind::array:
      out += '[';
      for (std::size_t i = 0; i < n.items.size(); ++i) {
        if (i > 0) out += ',';
        append_json(out, n.items[i]);
      }
      out += ']';
      return;
    case JsonNode::Kind::object:
      out += '{';
      for (std::size_t i = 0; i < n.members.size(); ++i) {
        if (i > 0) out += ',';
        append_json_string(out, n.members[i].first);
        out += ':';
        append_json(out, n.members[i].second);
      }
      out += '}';
      return;
  }
}

std::optional<Envelope> read_envelope(std::string_view text,
                                      const ck::jsonio::JsonLimits& limits,
                                      std::string& refusal) {
  Envelope e;
  try {
    e.message = ck::jsonio::parse_json(text, "message", limits);
  } catch (const Error& err) {
    // Valid JSON refused (a duplicate key, a number beyond the fixed-point range, a limit)
    // is answered with its id when that can be read.
    const auto id = ck::jsonio::find_top_level_member(text, "id");
    if (!id.is_json) {
      refusal = error_message("null", kParseError, std::string("parse error: ") + err.what());
      return std::nullopt;
    }
    const JsonNode* node = id.value ? &*id.value : nullptr;
    refusal = error_message(valid_id(node) ? id_json(node) : "null",
                            kInvalidRequest,
                            std::string("invalid request: ") + err.what());
    return std::nullopt;
  }
  const JsonNode& msg = e.message;
  if (msg.kind == JsonNode::Kind::array) {
    refusal = error_message("null", kInvalidRequest, "invalid request: batches are not supported");
    return std::nullopt;
  }
  if (msg.kind != JsonNode::Kind::object) {
    refusal = error_message("null", kInvalidRequest, "invalid request: not a JSON-RPC object");
    return std::nullopt;
  }
  const JsonNode* id = msg.find("id");
  const bool id_ok = valid_id(id);
  e.id = id_ok ? id_json(id) : "null";
  const JsonNode* version = msg.find("jsonrpc");
  if (version == nullptr || version->kind != JsonNode::Kind::string || version->text != "2.0") {
    refusal = error_message(e.id, kInvalidRequest, "invalid request: `jsonrpc` must be \"2.0\"");
    return std::nullopt;
  }
  if (!id_ok) {
    refusal = error_message(
        "null", kInvalidRequest, "invalid request: `id` must be a string or an integer");
    return std::nullopt;
  }
  e.method = msg.find("method");
  if (e.method == nullptr) {
    if (msg.find("result") != nullptr || msg.find("error") != nullptr) {
      e.reply = true;
      return e;
    }
    refusal = error_message(e.id, kInvalidRequest, "invalid request: no `method`");
    return std::nullopt;
  }
  if (e.method->kind != JsonNode::Kind::string) {
    refusal = error_message(e.id, kInvalidRequest, "invalid request: `method` must be a string");
    return std::nullopt;
  }
  e.notification = id == nullptr;
  e.params = msg.find("params");
  return e;
}

LineReader::LineReader(std::istream& in, std::size_t limit)
    : source_([&buf = *in.rdbuf()](char* out, std::size_t capacity) -> std::ptrdiff_t {
        const std::streamsize ready = buf.in_avail();
        if (ready > 0)
          return static_cast<std::ptrdiff_t>(
              buf.sgetn(out, std::min(ready, static_cast<std::streamsize>(capacity))));
        const auto c = buf.sbumpc();
        if (c == std::char_traits<char>::eof()) return 0;
        out[0] = std::char_traits<char>::to_char_type(c);
        return 1;
      }),
      limit_(limit) {}

LineReader::Got LineReader::next(std::string& line) {
  for (;;) {
    if (at_ == end_) {
      at_ = end_ = 0;
      const std::ptrdiff_t n = source_(block_.data(), block_.size());
      if (n < 0) {
        line.clear();
        return Got::timeout;
      }
      if (n == 0) {
        const bool any = any_;
        const bool too_long = too_long_;
        any_ = too_long_ = false;
        line = std::move(partial_);
        partial_.clear();
        if (!any) return Got::end;
        return too_long ? Got::too_long : Got::line;
      }
      end_ = static_cast<std::size_t>(n);
    }
    any_ = true;
    const char* from = block_.data() + at_;
    const auto* nl = static_cast<const char*>(std::memchr(from, '\n', end_ - at_));
    const std::size_t n = nl != nullptr ? static_cast<std::size_t>(nl - from) : end_ - at_;
    if (!too_long_ && partial_.size() + n > limit_) {
      too_long_ = true;
      std::string().swap(partial_);
    }
    if (!too_long_) partial_.append(from, n);
    at_ += n;
    if (nl != nullptr) {
      ++at_;
      const bool too_long = too_long_;
      any_ = too_long_ = false;
      line = std::move(partial_);
      partial_.clear();
      return too_long ? Got::too_long : Got::line;
    }
  }
}

}  // namespace clampai::server::jsonrpc
