"""`clampai.reasoning`, as in the Python ClampAI: beliefs, the dependency graph, action values, the
prompt and its parsing, the LLM adapters, for code that imports them from here. The same objects
as at the package's top level."""

from . import (REASONING_CLAIMS, ActionValue, ActionValueComputer, Belief, BeliefState,
               CausalGraph, Dependency, LLMAdapter, MockLLMAdapter, ReasoningRequest,
               ReasoningResponse, parse_llm_response)
# The Python ClampAI's prompt helpers: in this module only, as there.
from ._reasoning import (CausalNode, compute_state_delta, estimate_tokens,
                         integral_sensitivity_filter, should_skip_llm)

__all__ = ["ActionValue", "ActionValueComputer", "Belief", "BeliefState", "CausalGraph",
           "CausalNode", "Dependency", "LLMAdapter", "MockLLMAdapter", "REASONING_CLAIMS",
           "ReasoningRequest", "ReasoningResponse", "compute_state_delta", "estimate_tokens",
           "integral_sensitivity_filter", "parse_llm_response", "should_skip_llm"]
