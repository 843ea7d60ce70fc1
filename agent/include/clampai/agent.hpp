// ClampAI agent (seed layers 1 and 2): include this for the reasoning engine, the orchestrator
// and the LLM adapters.
#include "clampai/agent/answer.hpp"
#include "clampai/agent/beliefs.hpp"
#include "clampai/agent/causal_graph.hpp"
#include "clampai/agent/distance.hpp"
#include "clampai/agent/http.hpp"
#include "clampai/agent/llm.hpp"
#include "clampai/agent/mock.hpp"
#include "clampai/agent/orchestrator.hpp"
#include "clampai/agent/saliency.hpp"
#include "clampai/agent/transcript.hpp"
#include "clampai/agent/valuation.hpp"
