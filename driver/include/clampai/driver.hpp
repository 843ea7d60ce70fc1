// ClampAI driver: include this to drive a committer over many steps (the run loop, the explicit
// lookahead and its kernel guard, the approvals' ticket book).
#pragma once

#include "clampai/driver/approvals.hpp"
#include "clampai/driver/committer.hpp"
#include "clampai/driver/driver.hpp"
#include "clampai/driver/lookahead.hpp"
#include "clampai/driver/shared_run.hpp"
