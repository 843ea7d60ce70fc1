// The kernel as a service: what `clampai serve` and `clampai mcp` are built from.
#pragma once

#include "clampai/server/http.hpp"
#include "clampai/server/mcp.hpp"
#include "clampai/server/principals.hpp"
#include "clampai/server/service.hpp"
