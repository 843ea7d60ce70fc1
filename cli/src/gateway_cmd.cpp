#include "gateway_cmd.hpp"

#include <unistd.h>

#include <iostream>

#include "clampai/kernel.hpp"
#include "clampai/server/gateway.hpp"
#include "output.hpp"
#include "serve_cmd.hpp"

namespace clampai::cli {

namespace {

std::string spec_path;
std::vector<std::string> command;  // after `--`
server::GatewayOptions options;
bool print = false;
std::string approvals = "elicit";
// Over HTTP (`--port`).
std::string host = "127.0.0.1", token_file, tls_cert, tls_key;
unsigned port = 0;
bool insecure = false;
CLI::Option* port_option = nullptr;  // given: over HTTP

// `--port`: the client over MCP's Streamable HTTP, authenticated as `clampai serve`'s clients.
int serve_over_http(const std::shared_ptr<const kernel::TaskModel>& model,
                    const server::Bindings& bindings) {
  if (token_file.empty() && !insecure)
    throw InvalidArgument(
        "--port: give --token-file FILE (the bearer token clients must send), or "
        "--insecure-no-auth to serve without one on a loopback address");
  if (insecure && !is_loopback(host))
    throw InvalidArgument(
        "--insecure-no-auth serves only a loopback address (127.0.0.1 or ::1), not `" + host +
        "`: give --token-file");
  server::GatewayHttpOptions http;
  if (!token_file.empty()) http.token = read_token(token_file);
  http.http.host = host;
  http.http.port = static_cast<unsigned short>(port);
  http.http.threads = 2;  // one may wait for the upstream while the other refuses and ends sessions
  http.http.tls_cert = tls_cert;
  http.http.tls_key = tls_key;
  http.http.limits.max_body_bytes = options.max_message_bytes;
  const int rc = server::run_gateway_http(
      model,
      bindings,
      options,
      http,
      [](const std::string& url) {
        std::cout << "listening on " << url << "/mcp" << std::endl;  // scripts wait for this line
      },
      std::cerr);
  std::cerr << "clampai gateway: stopped" << std::endl;
  return rc;
}

}  // namespace

void add_upstream_options(CLI::App* cmd, server::GatewayOptions& options) {
  cmd->add_option("--upstream-timeout-ms",
                  options.upstream_timeout_ms,
                  "Milliseconds the upstream has to answer one request (default 300000); past "
                  "it the upstream is stopped and a call's outcome is unknown")
      ->check(CLI::Range(1, 24 * 3600 * 1000));
  cmd->add_flag("--clear-env",
                options.clear_env,
                "Start the upstream with an empty environment (then only --env)");
  // One value a flag: `--env A=1 SPEC` must not take SPEC as a second variable.
  cmd->add_option("--env", options.env, "Set NAME=VALUE in the upstream's environment (repeatable)")
      ->allow_extra_args(false);
}

CLI::App* add_gateway_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "gateway",
      "Stand between an MCP client and one upstream MCP server (COMMAND, started without a "
      "shell): every tools/call is decided and committed by the kernel before it is forwarded, "
      "through the spec's bindings (docs/GATEWAY.md)");
  cmd->add_option("SPEC", spec_path, "Task spec (JSON) with a `bindings` section");
  cmd->add_option("COMMAND", command, "The upstream MCP server and its arguments, after `--`");
  cmd->add_option("--trace",
                  options.trace,
                  "Write the hash-chained trace (rejections and each call's outcome) to FILE");
  cmd->add_option("--ledger",
                  options.ledger,
                  "Share the budget, state and trace with other processes through this ledger: "
                  "postgresql://..., file:PATH or memory:");
  cmd->add_option("--max-in-flight",
                  options.max_in_flight,
                  "Calls forwarded and not answered yet at once (default 1: calls are "
                  "serialised); each is decided and committed before it is forwarded, and past N "
                  "the next waits")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-message-bytes",
                  options.max_message_bytes,
                  "Longest message the client may send (default 1048576); the upstream's answers "
                  "have their own limit of 64 MiB")
      ->check(CLI::Range(1024, 1 << 30));
  cmd->add_option("--approvals",
                  approvals,
                  "What happens to a call of an action whose spec asks for an approval: elicit "
                  "(ask the human at the client, through MCP elicitation, and wait for the "
                  "answer; a client without elicitation gets the pending ticket), deny (deny "
                  "it), skip (answer the pending ticket and forward nothing); default: elicit")
      ->option_text("MODE")
      ->check(CLI::IsMember({"elicit", "deny", "skip"}));
  add_upstream_options(cmd, options);
  cmd->add_option("--host", host, "With --port: the address to listen on (default 127.0.0.1)");
  port_option = cmd->add_option("--port",
                                port,
                                "Serve the client over MCP's Streamable HTTP on this TCP port "
                                "(endpoint /mcp; 0 picks a free one) instead of stdio")
                    ->check(CLI::Range(0, 65535));
  auto* token = cmd->add_option("--token-file",
                                token_file,
                                "With --port: a file holding the bearer token every request must "
                                "carry");
  cmd->add_flag("--insecure-no-auth",
                insecure,
                "With --port: serve without a token (a loopback --host only)")
      ->excludes(token);
  auto* cert = cmd->add_option("--tls-cert", tls_cert, "With --port: PEM certificate chain: HTTPS");
  auto* key = cmd->add_option("--tls-key", tls_key, "PEM private key of --tls-cert");
  cert->needs(key);
  key->needs(cert);
  cmd->add_flag("--print-bindings",
                print,
                "Start COMMAND, list its tools and write a starting `bindings` section with "
                "their pins (no SPEC)");
  return cmd;
}

int run_gateway_command() {
  std::string spec;
  try {
    if (print) {
      // Without SPEC, the command's first word lands there.
      options.command = command;
      if (!spec_path.empty()) options.command.insert(options.command.begin(), spec_path);
      if (options.command.empty())
        return fail("text", "gateway", "", "--print-bindings needs `-- COMMAND [ARGS...]`");
      return server::print_bindings(options, std::cout, std::cerr);
    }
    if (spec_path.empty() || command.empty())
      return fail(
          "text", "gateway", "", "usage: clampai gateway SPEC [options] -- COMMAND [ARGS...]");
    spec = spec_path;
    options.command = command;
    options.approvals = approvals == "deny"   ? server::GatewayApprovals::deny
                        : approvals == "skip" ? server::GatewayApprovals::skip
                                              : server::GatewayApprovals::elicit;
    const std::string text = kernel::read_text_file(spec);
    const auto model = kernel::load_spec(text);
    const server::Bindings bindings = server::load_bindings(text, *model);
    if (bindings.tools.empty())
      std::cerr << "clampai gateway: " << spec
                << " binds no tool (bindings.tools): every tool call will be refused\n";
    if (port_option->count() > 0) return serve_over_http(model, bindings);
    if (!token_file.empty() || insecure || !tls_cert.empty() || host != "127.0.0.1")
      return fail("text",
                  "gateway",
                  spec,
                  "--host, --token-file, --insecure-no-auth and --tls-cert need --port (the "
                  "client is served on stdio without it)");
    std::ios::sync_with_stdio(false);
    return server::run_gateway(model, bindings, options, STDIN_FILENO, std::cout, std::cerr);
  } catch (const Error& e) {
    if (dynamic_cast<const SpecError*>(&e) != nullptr)
      return fail("text", "gateway", spec, describe(spec, e));
    return fail("text", "gateway", spec, e.what());
  }
}

}  // namespace clampai::cli
