"""States that hold values beyond the kernel's types, as the Python ClampAI's do.

The kernel's values are None, bools, numbers, strings and lists of those. A Python ClampAI
state may also hold a mapping, a set or any object (`State({"payload": {"amount": 1.0}})`).
Such a value is kept beside the kernel's variables, in the instance's `_opaque` dict, and read
back (a deep copy, as there) by `get`, `state[key]`, `to_dict()` and the rest. The kernel never
reads it: a Python callable invariant sees it; a template or an expression over it is violated
with the reason (docs/PYTHON.md); the reference form's kernel carries it to the next state.
A task-bound kernel's variables are the spec's, typed: such a value there is a SpecError.

`install()` wraps the C++ State's methods once, at import; a state without such values takes
the C++ path after one dict lookup (`get` and `state[key]` look here only on a miss)."""

from __future__ import annotations

import copy
import decimal
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Dict, Optional

from ._clampai import State


def kernel_value(value: Any) -> bool:
    """Whether the kernel holds `value` (its type; its range is checked where it is held)."""
    if value is None or isinstance(value, (bool, int, float, decimal.Decimal, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(kernel_value(v) for v in value)
    return False


def opaque_of(state: Any) -> Optional[Dict[str, Any]]:
    """The values of `state` beyond the kernel's types (None when there are none)."""
    return getattr(state, "_opaque", None)


def attach(state: State, values: Dict[str, Any]) -> State:
    """`state`, holding `values` beside its kernel variables (none: it holds none)."""
    if values:
        state._opaque = values
    elif getattr(state, "_opaque", None) is not None:
        del state._opaque
    return state


def install() -> None:
    init, keys, length, to_dict = State.__init__, State.keys, State.__len__, State.to_dict
    with_updates, without_keys, describe = State.with_updates, State.without_keys, State.describe
    diff, eq, getstate, setstate = State.diff, State.__eq__, State.__getstate__, State.__setstate__
    digest, fingerprint, plain_repr = State.digest, State.fingerprint, State.__repr__

    def split(variables: Any):
        items = dict(variables.items() if isinstance(variables, Mapping) else variables)
        extra = {k: copy.deepcopy(v) for k, v in items.items() if not kernel_value(v)}
        return {k: v for k, v in items.items() if k not in extra}, extra

    def __init__(self: State, variables: Any) -> None:
        try:
            init(self, variables)
        except TypeError:
            if not isinstance(variables, Mapping):
                raise
            scalars, extra = split(variables)
            if not extra:
                raise
            init(self, scalars)
            attach(self, extra)

    def _keys(self: State):
        extra = opaque_of(self)
        return keys(self) + list(extra) if extra else keys(self)

    def _len(self: State) -> int:
        extra = opaque_of(self)
        return length(self) + (len(extra) if extra else 0)

    def _to_dict(self: State) -> Dict[str, Any]:
        out = to_dict(self)
        extra = opaque_of(self)
        if extra:
            out.update(copy.deepcopy(extra))
        return out

    def _with_updates(self: State, updates: Any):
        extra = opaque_of(self) or {}
        scalars, new_extra = split(updates)
        if not extra and not new_extra:
            return with_updates(self, updates)
        result = with_updates(self, scalars)
        replaced = [k for k in new_extra if k in keys(result)]
        if replaced:
            result = without_keys(result, replaced)
        kept = {k: v for k, v in extra.items() if k not in scalars}
        kept.update(new_extra)
        return attach(result, kept)

    def _without_keys(self: State, keys: Any):  # noqa: F811 - the C++ method's name for it
        names = set(keys)
        extra = opaque_of(self)
        result = without_keys(self, names)
        return attach(result, {k: v for k, v in extra.items() if k not in names}
                      ) if extra else result

    def _describe(self: State, max_keys: int = 20) -> str:
        extra = opaque_of(self)
        if not extra:
            return describe(self, max_keys)
        lines = describe(self, len(keys(self))).split("\n")[1:]
        for k, v in extra.items():
            text = repr(v)
            lines.append(f"  {k} = " + (text[:77] + "..." if len(text) > 80 else text))
        out = ["State:"] + lines[:max_keys]
        if len(lines) > max_keys:
            out.append(f"  ... and {len(lines) - max_keys} more")
        return "\n".join(out)

    def _diff(self: State, other: State):
        if not opaque_of(self) and not opaque_of(other):
            return diff(self, other)
        a, b = _to_dict(self), _to_dict(other)
        out = {k: (v, b.get(k)) for k, v in a.items() if k not in b or b[k] != v}
        out.update({k: (None, v) for k, v in b.items() if k not in a})
        return out

    def _digest(self: State) -> str:
        extra = opaque_of(self)
        if not extra:
            return digest.fget(self)
        text = json.dumps(extra, sort_keys=True, default=repr)
        return hashlib.sha256((digest.fget(self) + "\n" + text).encode()).hexdigest()

    def _eq(self: State, other: Any) -> bool:
        return bool(eq(self, other)) and (opaque_of(self) or {}) == (opaque_of(other) or {})

    def _hash(self: State) -> int:
        return hash(_digest(self)[:16])

    def _repr(self: State) -> str:
        return f"State({_to_dict(self)!r})" if opaque_of(self) else plain_repr(self)

    def _getstate(self: State) -> Dict[str, Any]:
        return _to_dict(self) if opaque_of(self) else getstate(self)

    def _setstate(self: State, arg0: Dict[str, Any]) -> None:  # pybind11's name for it
        scalars, extra = split(arg0)
        setstate(self, scalars)
        attach(self, extra)

    State.__init__ = __init__
    State.keys = _keys
    State.__len__ = _len
    State.__iter__ = lambda self: iter(_keys(self))
    State.to_dict = _to_dict
    State.with_updates = _with_updates
    State.without_keys = _without_keys
    State.describe = _describe
    State.diff = _diff
    State.digest = property(_digest, doc=digest.__doc__)
    State.fingerprint = property(lambda self: _digest(self)[:16], doc=fingerprint.__doc__)
    State.__eq__ = _eq
    State.__hash__ = _hash
    State.__repr__ = _repr
    State.__getstate__ = _getstate
    State.__setstate__ = _setstate
