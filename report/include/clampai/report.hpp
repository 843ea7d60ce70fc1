// The report library: every encoder and the progress reporter.
#pragma once

#include "clampai/report/agent.hpp"
#include "clampai/report/compose.hpp"
#include "clampai/report/format.hpp"
#include "clampai/report/html.hpp"
#include "clampai/report/ledger.hpp"
#include "clampai/report/live_charts.hpp"
#include "clampai/report/lookahead.hpp"
#include "clampai/report/progress.hpp"
#include "clampai/report/repair.hpp"
#include "clampai/report/run.hpp"
#include "clampai/report/verify.hpp"
