// ClampAI hardening (seed layer 3) and the reference monitor: include this to use them.
#pragma once

#include "clampai/hardening/attestor.hpp"
#include "clampai/hardening/http.hpp"
#include "clampai/hardening/monitor.hpp"
#include "clampai/hardening/patterns.hpp"
#include "clampai/hardening/proximity.hpp"
#include "clampai/hardening/subprocess.hpp"
