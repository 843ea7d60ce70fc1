"""The Python ClampAI's ProcessSharedBudgetController: one budget for several processes on one
machine, in a small file that every charge and refund reads and rewrites under its exclusive
lock (flock), so that T1 (net spend never exceeds the budget) and T4 (gross spend never falls)
hold across processes. Amounts are exact: integers of units of 10^-scale, as BudgetController
keeps them; they read back as floats, as in the Python ClampAI."""

from __future__ import annotations

import decimal
import fcntl
import json
import os
import tempfile
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

from ._errors import InvalidArgument
from ._reference_api import _digits, _exact, _number_text

__all__ = ["ProcessSharedBudgetController"]

_RECORD = 256  # the file is one record of this many bytes, rewritten with one pwrite
_MAX_SCALE = 12
_MAX_UNITS = 2 ** 63 - 1


class _Record:
    __slots__ = ("scale", "total", "gross", "refunded")

    def __init__(self, scale: int, total: int, gross: int = 0, refunded: int = 0) -> None:
        self.scale, self.total, self.gross, self.refunded = scale, total, gross, refunded

    @property
    def net(self) -> int:
        return self.gross - self.refunded

    def amount(self, units: int) -> decimal.Decimal:
        return decimal.Decimal(units).scaleb(-self.scale)

    def units(self, amount: decimal.Decimal) -> int:
        """`amount` in this record's units, refining the scale if it needs more digits."""
        need = _digits(amount)
        if need > _MAX_SCALE:
            raise ValueError(f"{amount} needs {need} digits after the point; a budget's amounts "
                             f"have at most {_MAX_SCALE}")
        if need > self.scale:
            k = 10 ** (need - self.scale)
            if self.total * k > _MAX_UNITS or self.gross * k > _MAX_UNITS:
                raise ValueError(f"{amount}: the budget does not fit 64-bit units with {need} "
                                 "digits after the point")
            self.scale, self.total = need, self.total * k
            self.gross, self.refunded = self.gross * k, self.refunded * k
        units = int(amount.scaleb(self.scale))
        if units > _MAX_UNITS:
            raise ValueError(f"{amount} does not fit 64-bit units")
        return units

    def encode(self) -> bytes:
        text = json.dumps({"clampai_budget": 1, "scale": self.scale, "total": self.total,
                           "gross": self.gross, "refunded": self.refunded},
                          separators=(",", ":")).encode()
        return text + b" " * (_RECORD - 1 - len(text)) + b"\n"

    @classmethod
    def decode(cls, data: bytes, path: str) -> "_Record":
        try:
            d = json.loads(data.decode())
            fields = [d["scale"], d["total"], d["gross"], d["refunded"]]
            if d.get("clampai_budget") != 1 or any(
                    type(v) is not int or v < 0 for v in fields) or d["refunded"] > d["gross"]:
                raise ValueError("a field is missing or out of range")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
            raise InvalidArgument(f"{path}: not a shared budget file ({err})") from None
        return cls(*fields)


def _remove(path: str, owner: int) -> None:
    if os.getpid() == owner:
        try:
            os.unlink(path)
        except OSError:
            pass


class ProcessSharedBudgetController:
    """`ProcessSharedBudgetController(budget, url=None)`: BudgetController's interface, with one
    budget for every process that holds this object (forked, or pickled to a spawned process) or
    opens the same file.

    `url`: None (a new temporary file, removed when the creating process drops this object),
    `file:PATH` or a path (a file shared by unrelated processes: created with `budget`, or
    reopened if it holds the same budget; any other budget is a ValueError naming the file).
    A PostgreSQL URL (the shared ledger) is not supported yet: NotImplementedError.

    Every operation opens the file, takes its exclusive lock, reads the record, decides,
    rewrites it, and closes it; so threads, forked children and unrelated processes exclude each
    other. `ledger` lists this process's own charges and refunds, as in the Python ClampAI."""

    def __init__(self, budget: float, url: Optional[str] = None) -> None:
        total = _exact(budget, "budget")
        if total < 0:
            raise ValueError(f"Budget must be >= 0, got {budget}")
        scale = max(5, _digits(total))
        if scale > _MAX_SCALE or int(total.scaleb(scale)) > _MAX_UNITS:
            raise ValueError(f"budget {budget} does not fit 64-bit units with {scale} digits "
                             "after the point")
        self._total = total
        self._log: List[Tuple[str, float, float]] = []
        self._local = threading.Lock()
        if url is None:
            fd, self._path = tempfile.mkstemp(prefix="clampai-budget-", suffix=".json")
            os.close(fd)
            self._finalizer: Any = weakref.finalize(self, _remove, self._path, os.getpid())
        else:
            self._path = _file_of(url)
            self._finalizer = None
        with self._locked() as rec:
            if rec is None:
                return  # created with this budget
            if rec.amount(rec.total) != total:
                raise ValueError(f"{self._path} holds a budget of "
                                 f"{format(rec.amount(rec.total).normalize(), 'f')}, not "
                                 f"{format(total.normalize(), 'f')}")

    # -- the file

    def _locked(self, write: bool = False) -> Any:
        return _FileLock(self, write)

    @property
    def path(self) -> str:
        """The file holding the budget."""
        return self._path

    def __getstate__(self) -> Dict[str, Any]:
        # A copy in another process (multiprocessing's spawn) shares the file; it never
        # removes it, and starts its own process-local ledger.
        return {"_total": self._total, "_path": self._path}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._total, self._path = state["_total"], state["_path"]
        self._log, self._local, self._finalizer = [], threading.Lock(), None

    def _read(self) -> _Record:
        with self._locked() as rec:
            assert rec is not None
            return rec

    # -- BudgetController's interface

    @property
    def budget(self) -> float:
        return float(self._total)

    @property
    def spent_gross(self) -> float:
        rec = self._read()
        return float(rec.amount(rec.gross))

    @property
    def spent_refunded(self) -> float:
        rec = self._read()
        return float(rec.amount(rec.refunded))

    @property
    def spent_net(self) -> float:
        rec = self._read()
        return float(rec.amount(rec.net))

    @property
    def spent(self) -> float:
        return self.spent_net

    @property
    def remaining(self) -> float:
        rec = self._read()
        return float(rec.amount(rec.total - rec.net))

    def exact(self) -> Dict[str, decimal.Decimal]:
        """budget, spent_gross, spent_refunded, spent_net, remaining as exact Decimals (one
        reading of the file)."""
        r = self._read()
        return {"budget": r.amount(r.total), "spent_gross": r.amount(r.gross),
                "spent_refunded": r.amount(r.refunded), "spent_net": r.amount(r.net),
                "remaining": r.amount(r.total - r.net)}

    def can_afford(self, cost: float) -> Tuple[bool, str]:
        amount = _cost(cost)
        rec = self._read()
        if rec.net + rec.units(amount) <= rec.total:
            return True, ""
        return False, (f"cannot afford {_number_text(amount)}: spent_net {rec.amount(rec.net)}, "
                       f"remaining {rec.amount(rec.total - rec.net)}")

    def charge(self, action_id: str, cost: float) -> None:
        """Charges `cost` across all processes (T1: RuntimeError, changing nothing, if it does
        not fit what is left)."""
        amount = _cost(cost)
        with self._locked(write=True) as rec:
            units = rec.units(amount)
            if rec.net + units > rec.total:
                raise RuntimeError(
                    f"budget: cannot charge {_number_text(amount)} for `{action_id}`: "
                    f"remaining {rec.amount(rec.total - rec.net)}")
            rec.gross += units
        with self._local:
            self._log.append((action_id, float(amount), time.time()))

    def refund(self, action_id: str, cost: float) -> None:
        """Refunds `cost` (the net spend falls, the gross does not: T4). More than the net spend
        is refused with InvalidArgument, as BudgetController refuses it."""
        amount = _cost(cost)
        with self._locked(write=True) as rec:
            units = rec.units(amount)
            if units > rec.net:
                raise InvalidArgument(
                    f"cannot refund {_number_text(amount)} for `{action_id}`: more than the "
                    f"net spend {rec.amount(rec.net)}")
            rec.refunded += units
        with self._local:
            self._log.append((f"REFUND:{action_id}", -float(amount), time.time()))

    def utilization(self) -> float:
        rec = self._read()
        return 0.0 if rec.total == 0 else rec.net / rec.total

    @property
    def ledger(self) -> List[Tuple[str, float, float]]:
        """This process's charges and refunds: (action_id, amount, time)."""
        with self._local:
            return list(self._log)

    def summary(self) -> str:
        e = self.exact()
        utilization = 0.0 if e["budget"] == 0 else float(e["spent_net"] / e["budget"])
        return (f"Budget: {e['budget']} | Spent (gross): {e['spent_gross']} | Refunded: "
                f"{e['spent_refunded']} | Spent (net): {e['spent_net']} | Remaining: "
                f"{e['remaining']} | Utilization: {utilization:.1%}")

    def __repr__(self) -> str:
        return f"ProcessSharedBudgetController({self._path}: {self.summary()})"


class _FileLock:
    """`with _FileLock(controller, write) as record`: the file opened and exclusively locked,
    its record read (None when the file was empty: it is then created with the budget), and
    on a clean exit of a writer the record written back in one pwrite."""

    def __init__(self, owner: ProcessSharedBudgetController, write: bool = False) -> None:
        self.owner, self.write = owner, write
        self.fd = -1
        self.rec: Optional[_Record] = None

    def __enter__(self) -> Any:
        path = self.owner._path
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as err:
            raise InvalidArgument(f"{path}: cannot open the shared budget file: "
                                  f"{err.strerror}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            data = os.pread(self.fd, _RECORD, 0)
            if not data:
                total = self.owner._total
                scale = max(5, _digits(total))
                self.rec = _Record(scale, int(total.scaleb(scale)))
                os.pwrite(self.fd, self.rec.encode(), 0)
                return None if not self.write else self.rec
            self.rec = _Record.decode(data, path)
            return self.rec
        except BaseException:
            os.close(self.fd)
            raise

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        try:
            if self.write and kind is None and self.rec is not None:
                os.pwrite(self.fd, self.rec.encode(), 0)
        finally:
            os.close(self.fd)  # releases the lock


def _cost(cost: Any) -> decimal.Decimal:
    amount = _exact(cost, "cost")
    if amount < 0:
        raise ValueError(f"Cost must be >= 0, got {cost}")
    return amount


def _file_of(url: Any) -> str:
    if not isinstance(url, (str, os.PathLike)):
        raise TypeError(f"url must be a string, not {type(url).__name__}")
    url = os.fspath(url)
    if url.startswith(("postgresql://", "postgres://")):
        raise NotImplementedError(
            "ProcessSharedBudgetController on a PostgreSQL ledger is not supported yet: use a "
            "file (`file:PATH`) for processes on one machine")
    path = url[len("file:"):] if url.startswith("file:") else url
    if not path or "://" in url:
        raise ValueError(f"url {url!r}: expected `file:PATH`, a path, or None")
    return path

