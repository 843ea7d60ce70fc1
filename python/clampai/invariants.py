"""The invariant library: factories with the reference's names and parameters, each returning an
`Invariant` that is one of the spec's templates (docs/SPEC.md section 15), expanded and checked
by the C++ spec loader. The expression templates are ordinary invariants: the kernel enforces
them and the verifier proves them. `no_duplicate_ids`, `pii_pattern` and `secret_pattern` are
native predicates of the C++ library (RE2 for the patterns): enforced by the kernel, reported
`unknown` by the verifier. Where a factory deliberately differs from the reference,
docs/PYTHON.md says so (and the factory's docstring).

    from clampai.invariants import rate_limit_invariant, pii_guard_invariant
"""

from __future__ import annotations

import re
import time as _time
from decimal import Decimal as _Decimal
from typing import Any, Callable, Collection, Dict, Mapping, Optional, Sequence

from ._task import Invariant

__all__ = [
    "rate_limit_invariant", "resource_ceiling_invariant", "value_range_invariant",
    "no_delete_invariant", "read_only_keys_invariant", "required_fields_invariant",
    "allowed_values_invariant", "monotone_increasing_invariant", "monotone_decreasing_invariant",
    "list_length_invariant", "no_duplicate_ids_invariant", "pii_guard_invariant",
    "secret_guard_invariant", "time_window_rate_invariant", "max_retries_invariant",
    "api_call_limit_invariant", "file_operation_limit_invariant", "email_safety_invariant",
    "human_approval_gate_invariant", "no_action_after_flag_invariant",
    "no_sensitive_substring_invariant", "no_regex_match_invariant", "non_empty_invariant",
    "string_length_invariant", "json_schema_invariant", "custom_invariant",
]


def _make(name: str, template: Dict[str, Any], description: str, enforcement: str,
          suggestion: Optional[str]) -> Invariant:
    return Invariant(name, template, description=description, enforcement=enforcement,
                     suggestion=suggestion or "")


def _names(values: Any, what: str) -> list:
    if isinstance(values, str):
        raise TypeError(f"{what}: give a collection of variable names, not one string")
    return [str(v) for v in values]


def rate_limit_invariant(key: str, max_count: int, *, enforcement: str = "blocking",
                         suggestion: Optional[str] = None) -> Invariant:
    """`key <= max_count` (template `rate_limit`)."""
    return _make(f"rate_limit:{key}", {"template": "rate_limit", "variable": key,
                                       "max": max_count},
                 f"`{key}` stays at most {max_count}", enforcement, suggestion)


def resource_ceiling_invariant(key: str, ceiling: Any, *, enforcement: str = "blocking",
                               suggestion: Optional[str] = None) -> Invariant:
    """`key <= ceiling` (template `resource_ceiling`)."""
    return _make(f"resource_ceiling:{key}", {"template": "resource_ceiling", "variable": key,
                                             "max": ceiling},
                 f"`{key}` stays at most {ceiling}", enforcement, suggestion)


def value_range_invariant(key: str, min_val: Any = None, max_val: Any = None, *,
                          enforcement: str = "blocking",
                          suggestion: Optional[str] = None) -> Invariant:
    """`min_val <= key <= max_val` (template `value_range`; either bound may be None)."""
    template: Dict[str, Any] = {"template": "value_range", "variable": key}
    if min_val is not None:
        template["min"] = min_val
    if max_val is not None:
        template["max"] = max_val
    return _make(f"value_range:{key}", template,
                 f"`{key}` stays within [{min_val}, {max_val}]", enforcement, suggestion)


def no_delete_invariant(key: str, *, enforcement: str = "blocking",
                        suggestion: Optional[str] = None) -> Invariant:
    """`defined(key)` (template `no_delete`): the variable is never deleted. Unlike the
    reference, a falsy value (0, "", []) is not a violation: the model's values are typed."""
    return _make(f"no_delete:{key}", {"template": "no_delete", "variable": key},
                 f"`{key}` is never deleted", enforcement, suggestion)


def read_only_keys_invariant(keys: Collection[str], initial_state: Any = None, *,
                             enforcement: str = "blocking",
                             suggestion: Optional[str] = None) -> Invariant:
    """Every key keeps its value across every action (template `read_only`: `a == old(a)`).
    `initial_state` is accepted for the reference's signature and not needed: the kernel
    starts from the task's initial state and checks each step, so the values stay those."""
    names = _names(keys, "read_only_keys_invariant")
    return _make("read_only:" + ",".join(names), {"template": "read_only", "variables": names},
                 "read-only: " + ", ".join(f"`{n}`" for n in names), enforcement, suggestion)


def required_fields_invariant(fields: Collection[str], *, enforcement: str = "blocking",
                              suggestion: Optional[str] = None) -> Invariant:
    """Every field is defined (template `required_fields`)."""
    names = _names(fields, "required_fields_invariant")
    return _make("required_fields:" + ",".join(names),
                 {"template": "required_fields", "variables": names},
                 "required: " + ", ".join(f"`{n}`" for n in names), enforcement, suggestion)


def allowed_values_invariant(key: str, allowed: Collection[Any], *,
                             enforcement: str = "blocking",
                             suggestion: Optional[str] = None) -> Invariant:
    """`key in {allowed...}` (template `allowed_values`)."""
    values = list(allowed)
    return _make(f"allowed_values:{key}", {"template": "allowed_values", "variable": key,
                                           "values": values},
                 f"`{key}` is one of {values}", enforcement, suggestion)


def monotone_increasing_invariant(key: str, initial_value: Any = 0.0, *,
                                  enforcement: str = "blocking",
                                  suggestion: Optional[str] = None,
                                  strict: bool = False) -> Invariant:
    """`key >= old(key)` (template `monotone`): no action decreases it. Unlike the reference
    this is a transition rule, not a closure that remembers the largest value seen, so it is
    the same for every kernel and the verifier proves it; `initial_value` is accepted for the
    reference's signature and not used."""
    del initial_value
    return _make(f"monotone_increasing:{key}",
                 {"template": "monotone", "variable": key, "direction": "increasing",
                  "strict": bool(strict)},
                 f"`{key}` never decreases", enforcement, suggestion)


def monotone_decreasing_invariant(key: str, initial_value: Any = float("inf"), *,
                                  enforcement: str = "blocking",
                                  suggestion: Optional[str] = None,
                                  strict: bool = False) -> Invariant:
    """`key <= old(key)` (template `monotone`, decreasing); see
    `monotone_increasing_invariant`."""
    del initial_value
    return _make(f"monotone_decreasing:{key}",
                 {"template": "monotone", "variable": key, "direction": "decreasing",
                  "strict": bool(strict)},
                 f"`{key}` never increases", enforcement, suggestion)


def list_length_invariant(key: str, max_length: int, *, min_length: Optional[int] = None,
                          enforcement: str = "blocking",
                          suggestion: Optional[str] = None) -> Invariant:
    """`len(key) <= max_length` (and `>= min_length` if given; template `list_length`)."""
    template: Dict[str, Any] = {"template": "list_length", "variable": key, "max": max_length}
    if min_length is not None:
        template["min"] = min_length
    return _make(f"list_length:{key}", template,
                 f"`{key}` holds at most {max_length} items", enforcement, suggestion)


def no_duplicate_ids_invariant(key: str, *, enforcement: str = "blocking",
                               suggestion: Optional[str] = None) -> Invariant:
    """No two equal elements in the list `key` (template `no_duplicate_ids`, a native
    predicate: enforced by the kernel, `unknown` to the verifier)."""
    return _make(f"no_duplicate_ids:{key}", {"template": "no_duplicate_ids", "variable": key},
                 f"`{key}` has no duplicates", enforcement, suggestion)


def _pattern_invariant(template: str, label: str, keys: Sequence[str],
                       patterns: Optional[Sequence[str]], enforcement: str,
                       suggestion: Optional[str]) -> Invariant:
    if not keys:
        raise TypeError(f"{label}: name at least one variable")
    spec: Dict[str, Any] = {"template": template, "variables": [str(k) for k in keys]}
    if patterns is not None:
        spec["patterns"] = list(patterns)
    return _make(f"{template}:" + ",".join(spec["variables"]), spec,
                 f"no {template.split('_')[0]} in " + ", ".join(f"`{k}`" for k in keys),
                 enforcement, suggestion)


def pii_guard_invariant(*keys: str, patterns: Optional[Sequence[str]] = None,
                        enforcement: str = "blocking",
                        suggestion: Optional[str] = None) -> Invariant:
    """No string in the variables (strings, enums, lists of them) matches a PII pattern
    (template `pii_pattern`, RE2; default patterns: email, ssn, credit_card, phone, iban).
    `patterns` names built-in patterns or gives `regex:...` (RE2 syntax)."""
    return _pattern_invariant("pii_pattern", "pii_guard_invariant", keys, patterns,
                              enforcement, suggestion)


def secret_guard_invariant(*keys: str, patterns: Optional[Sequence[str]] = None,
                           enforcement: str = "blocking",
                           suggestion: Optional[str] = None) -> Invariant:
    """No string in the variables matches a secret's pattern (template `secret_pattern`;
    default: aws_access_key, private_key, github_token, bearer_token, credential_assignment).
    Not in the reference."""
    return _pattern_invariant("secret_pattern", "secret_guard_invariant", keys, patterns,
                              enforcement, suggestion)


def time_window_rate_invariant(key: str, max_count: int, window_seconds: Any, *,
                               window_start: Optional[str] = None, clock: Optional[str] = None,
                               enforcement: str = "blocking",
                               suggestion: Optional[str] = None) -> Invariant:
    """`clock - window_start < window_seconds -> key <= max_count` (template
    `time_window_rate`): `key` is a counter, `window_start` and `clock` are variables the task's
    actions maintain (in the clock's units), so the verifier reasons about it.

    Without `window_start` and `clock`, the Python ClampAI's form: `key` holds a list of
    `time.time()` timestamps and at most `max_count` of them may lie within the last
    `window_seconds` of the wall clock (a Python callable: enforced, `unknown` to the verifier;
    the Python ClampAI allows `max_count - 1`). An absent or non-list `key` holds."""
    if window_start is None and clock is None:
        def recent_at_most(state: Any) -> bool:
            stamps = state.get(key)
            if not isinstance(stamps, (list, tuple)):
                return True
            now = _time.time()
            # A state's floats are exact Decimals here.
            return sum(1 for t in stamps if isinstance(t, (int, float, _Decimal))
                       and not isinstance(t, bool) and now - float(t) <= window_seconds
                       ) <= max_count

        return Invariant(f"time_window_rate:{key}", recent_at_most,
                         description=f"at most {max_count} entries of `{key}` within the last "
                         f"{window_seconds}s", enforcement=enforcement,
                         suggestion=suggestion or f"wait for the {window_seconds}s window of "
                         f"`{key}` to roll over")
    if window_start is None or clock is None:
        raise TypeError("time_window_rate_invariant: give both `window_start` and `clock` (a "
                        "counter over the task's own clock) or neither (a list of wall-clock "
                        "timestamps)")
    return _make(f"time_window_rate:{key}",
                 {"template": "time_window_rate", "count": key, "window_start": window_start,
                  "clock": clock, "window": window_seconds, "max": max_count},
                 f"at most {max_count} `{key}` within {window_seconds} of `{window_start}`",
                 enforcement, suggestion)


def max_retries_invariant(key: str, limit: int, *, enforcement: str = "blocking",
                          suggestion: Optional[str] = None) -> Invariant:
    """`key <= limit`: a retry counter's cap (template `rate_limit`)."""
    return _make(f"max_retries:{key}", {"template": "rate_limit", "variable": key,
                                        "max": limit},
                 f"`{key}` retries at most {limit} times", enforcement, suggestion)


def api_call_limit_invariant(key: str = "api_calls", max_calls: int = 100, *,
                             enforcement: str = "blocking",
                             suggestion: Optional[str] = None) -> Invariant:
    """`key <= max_calls` (`rate_limit_invariant`, as in the reference)."""
    return rate_limit_invariant(key, max_calls, enforcement=enforcement, suggestion=suggestion)


def file_operation_limit_invariant(key: str = "files_modified", max_ops: int = 50, *,
                                   enforcement: str = "blocking",
                                   suggestion: Optional[str] = None) -> Invariant:
    """`key <= max_ops` (`rate_limit_invariant`, as in the reference)."""
    return rate_limit_invariant(key, max_ops, enforcement=enforcement, suggestion=suggestion)


def email_safety_invariant(*, enforcement: str = "blocking") -> Invariant:
    """`emails_deleted <= 0`: no email is deleted (template `rate_limit` with max 0)."""
    return _make("email_safety:no_delete", {"template": "rate_limit",
                                            "variable": "emails_deleted", "max": 0},
                 "no email is deleted", enforcement,
                 "Do not delete emails; archive them or ask for approval.")


def human_approval_gate_invariant(approval_key: str, *, enforcement: str = "blocking",
                                  suggestion: Optional[str] = None) -> Invariant:
    """The bool variable `approval_key` is true (an expression): nothing happens before the
    approval. Unlike the reference, the variable is a bool (the model's values are typed)."""
    return Invariant(f"human_approval_gate:{approval_key}", approval_key,
                     description=f"`{approval_key}` must be true (human approval)",
                     enforcement=enforcement,
                     suggestion=suggestion or f"Wait until `{approval_key}` is set.")


def no_action_after_flag_invariant(flag_key: str, *, enforcement: str = "blocking",
                                   suggestion: Optional[str] = None) -> Invariant:
    """The bool variable `flag_key` is false (an expression, `!flag_key`): nothing happens once
    it is set."""
    return Invariant(f"no_action_after_flag:{flag_key}", f"!{flag_key}",
                     description=f"no action once `{flag_key}` is set",
                     enforcement=enforcement,
                     suggestion=suggestion or f"`{flag_key}` is set: stop.")


def no_sensitive_substring_invariant(key: str, forbidden: Collection[str], *,
                                     case_sensitive: bool = False,
                                     enforcement: str = "blocking",
                                     suggestion: Optional[str] = None) -> Invariant:
    """No string in `key` contains one of `forbidden` (ignoring case unless `case_sensitive`):
    the native pattern template (`pii_pattern`, RE2) with the substrings as one pattern."""
    words = _names(forbidden, "no_sensitive_substring_invariant")
    if not words or any(not w for w in words):
        raise ValueError("no_sensitive_substring_invariant: give non-empty substrings")
    pattern = ("" if case_sensitive else "(?i)") + "|".join(re.escape(w) for w in words)
    return _make(f"no_sensitive_substring:{key}",
                 {"template": "pii_pattern", "variables": [key], "patterns": ["regex:" + pattern]},
                 f"`{key}` contains none of {words}", enforcement, suggestion)


def no_regex_match_invariant(key: str, pattern: str, *, enforcement: str = "blocking",
                             suggestion: Optional[str] = None) -> Invariant:
    """No string in `key` matches `pattern` anywhere (the native pattern template, RE2 syntax:
    a pattern RE2 does not accept, a lookahead say, is a SpecError naming it)."""
    return _make(f"no_regex:{key}",
                 {"template": "pii_pattern", "variables": [key], "patterns": ["regex:" + pattern]},
                 f"`{key}` does not match {pattern!r}", enforcement, suggestion)


def non_empty_invariant(key: str, *, enforcement: str = "blocking",
                        suggestion: Optional[str] = None) -> Invariant:
    """`key` is defined and not empty, zero or false (a Python callable: the kernel enforces
    it, the verifier reports it `unknown`)."""
    return Invariant(f"non_empty:{key}", lambda s: bool(s.get(key)),
                     description=f"`{key}` must be non-empty", enforcement=enforcement,
                     suggestion=suggestion or "")


def string_length_invariant(key: str, max_length: int, *, enforcement: str = "blocking",
                            suggestion: Optional[str] = None) -> Invariant:
    """`len(str(key)) <= max_length`, an absent value passing (a Python callable)."""
    def holds(s: Any) -> bool:
        value = s.get(key)
        return value is None or len(str(value)) <= max_length
    return Invariant(f"string_length:{key}", holds,
                     description=f"`{key}` holds at most {max_length} characters",
                     enforcement=enforcement, suggestion=suggestion or "")


def json_schema_invariant(key: str, schema: Mapping[str, type], *,
                          enforcement: str = "blocking",
                          suggestion: Optional[str] = None) -> Invariant:
    """`key` (a dict) has the types `schema` gives its fields; absent or None passes, another
    value fails (a Python callable). The kernel's states hold no dicts: this serves values a
    callable reads from elsewhere."""
    fields = dict(schema)

    def holds(s: Any) -> bool:
        value = s.get(key)
        if value is None:
            return True
        if not isinstance(value, Mapping):
            return False
        return all(isinstance(value[f], t) for f, t in fields.items() if f in value)
    return Invariant(f"json_schema:{key}", holds,
                     description=f"`{key}` fields match the schema: {list(fields)}",
                     enforcement=enforcement, suggestion=suggestion or "")


def custom_invariant(name: str, validator: Callable[[Any], Any], key: str, *,
                     description: str = "", enforcement: str = "blocking",
                     suggestion: Optional[str] = None,
                     max_eval_ms: Optional[float] = None) -> Invariant:
    """`validator(state.get(key))` (a Python callable). `max_eval_ms` is accepted and not
    enforced, as for `Invariant`: a decision never depends on timing here."""
    if not callable(validator):
        raise TypeError("custom_invariant: the validator must be callable")
    return Invariant(name, lambda s: validator(s.get(key)), description=description,
                     enforcement=enforcement, suggestion=suggestion or "",
                     max_eval_ms=max_eval_ms)
