// ClampAI driver: include this to drive a kernel over many steps (runs, the explicit lookahead
// and its kernel guard).
#pragma once

#include "clampai/driver/driver.hpp"
#include "clampai/driver/lookahead.hpp"
#include "clampai/driver/shared_run.hpp"
