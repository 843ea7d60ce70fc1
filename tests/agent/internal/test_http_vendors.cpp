// White-box: the adapters' wire decisions that no local server can observe (the public OpenAI
// endpoint's token-limit field) and the tool-name aliases.
#include <catch2/catch.hpp>

#include "http_vendors.hpp"

using clampai::agent::ToolSpec;
using clampai::agent::detail::make_tool_names;
using clampai::agent::detail::openai_max_tokens_field;

TEST_CASE("HTTP vendors: api.openai.com gets max_completion_tokens, other servers max_tokens",
          "[agent][llm_http]") {
  CHECK(openai_max_tokens_field("https://api.openai.com/v1") == "max_completion_tokens");
  CHECK(openai_max_tokens_field("https://api.openai.com") == "max_completion_tokens");
  CHECK(openai_max_tokens_field("https://api.openai.com.evil.example/v1") == "max_tokens");
  CHECK(openai_max_tokens_field("http://api.openai.com/v1") == "max_tokens");
  CHECK(openai_max_tokens_field("http://127.0.0.1:8080/v1") == "max_tokens");
}

TEST_CASE("HTTP vendors: valid unique names travel as they are; others get distinct aliases",
          "[agent][llm_http]") {
  const std::string long_id(128, 'z');
  const auto names = make_tool_names({ToolSpec{"pay", "", {}},
                                      ToolSpec{"pay", "", {}},
                                      ToolSpec{long_id, "", {}},
                                      ToolSpec{"", "", {}},
                                      ToolSpec{"pay_1", "", {}}});
  REQUIRE(names.wire.size() == 5);
  CHECK(names.wire[0] == "pay");
  CHECK(names.wire[1] != "pay");
  CHECK(names.wire[1] != "pay_1");  // an alias never takes another tool's real name
  CHECK(names.wire[4] == "pay_1");
  CHECK(names.wire[2].size() <= 64);
  CHECK(names.wire[3] == "tool_3");
  CHECK(names.original(names.wire[2]) == long_id);
  CHECK(names.original(names.wire[3]).empty());
  CHECK(names.original("pay") == "pay");
  CHECK(names.original("unknown") == "unknown");
}
