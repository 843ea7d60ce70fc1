// MCP's Streamable HTTP transport (revisions 2025-06-18 and 2025-03-26) in front of the
// gateway's message handling: sessions, headers, Origin and token checks, on `serve_http`.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "clampai/server/gateway.hpp"

namespace clampai::server {

/// One client message in (a JSON-RPC message, already checked as an envelope); what the gateway
/// wrote in answer out, one message a line (the answer to a request is the last).
using McpExchange = std::function<std::string(const std::string& message)>;

/// Serves `exchange` on `options.http` until SIGTERM or SIGINT (`run_gateway_http`). Returns 0.
/// @throws Error if the address cannot be bound or the TLS files cannot be loaded.
int serve_mcp_http(const McpExchange& exchange,
                   const GatewayHttpOptions& options,
                   const std::function<void(const std::string& url)>& on_listening,
                   std::ostream& log);

}  // namespace clampai::server
