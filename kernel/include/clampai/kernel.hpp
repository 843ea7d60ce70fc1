// ClampAI safety kernel (Layer 0): include this to use the kernel.
#pragma once

#include "clampai/kernel/budget.hpp"
#include "clampai/kernel/decision.hpp"
#include "clampai/kernel/digest.hpp"
#include "clampai/kernel/error.hpp"
#include "clampai/kernel/expr.hpp"
#include "clampai/kernel/file.hpp"
#include "clampai/kernel/ledger.hpp"
#include "clampai/kernel/model.hpp"
#include "clampai/kernel/number.hpp"
#include "clampai/kernel/safety_kernel.hpp"
#include "clampai/kernel/spec_loader.hpp"
#include "clampai/kernel/state.hpp"
#include "clampai/kernel/suggest.hpp"
#include "clampai/kernel/trace.hpp"
#include "clampai/kernel/type.hpp"
#include "clampai/kernel/value.hpp"
