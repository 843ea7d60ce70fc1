// ClampAI verifier: include this to verify task models statically with Z3.
#pragma once

#include "clampai/verifier/contract.hpp"
#include "clampai/verifier/lookahead.hpp"
#include "clampai/verifier/repair.hpp"
#include "clampai/verifier/tuning.hpp"
#include "clampai/verifier/verify.hpp"
