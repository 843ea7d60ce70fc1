"""`clampai.verification_log`, as in the Python ClampAI: a run's proof record (what was checked
at each step and whether it passed), as a JSON file a third party can read, with a hash over
the record. This project's own record of a run is its hash-chained trace and the run report
(`clampai run`, `clampai trace verify`): this module is kept for code written against the
Python ClampAI."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from typing import List, Optional

__all__ = ["ProofStep", "ProofRecord", "write_proof"]


@dataclass
class ProofStep:
    """One step: the action, whether it was approved and why, and optional margins."""

    step_index: int
    action_id: str
    action_name: str
    approved: bool
    reason: str
    kernel_reasons: List[str] = field(default_factory=list)
    monitor_reason: str = ""
    cbf_margin: Optional[float] = None
    ifc_ok: Optional[bool] = None
    hjb_ok: Optional[bool] = None
    prompt_tokens_est: int = 0
    output_tokens_est: int = 0


@dataclass
class ProofRecord:
    """A run's steps, with its goal, budget and the trace's head hash."""

    version: str
    created_at: float
    goal: str
    budget: float
    trace_hash_head: str
    steps: List[ProofStep]

    def to_json(self) -> str:
        """The record as indented JSON (keys sorted), with `record_hash`: the SHA-256 of the
        record's compact sorted JSON without it."""
        payload = asdict(self)
        canonical = json.dumps(payload, sort_keys=True, default=str)
        payload["record_hash"] = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        return json.dumps(payload, indent=2, sort_keys=True, default=str)


def write_proof(path: str, record: ProofRecord) -> None:
    """Writes `record.to_json()` and a newline to `path`, creating its directory."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(record.to_json() + "\n")
