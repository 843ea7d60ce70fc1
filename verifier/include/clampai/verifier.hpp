// ClampAI verifier: include this to verify task models statically with Z3.
#pragma once

#include "clampai/verifier/verify.hpp"
