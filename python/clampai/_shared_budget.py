"""The Python ClampAI's ProcessSharedBudgetController: one budget for several processes, in a small
file that every charge and refund reads and rewrites under its exclusive lock (flock), or as a
task on the shared ledger (PostgreSQL, the C++ SharedKernel), so that T1 (net spend never
exceeds the budget) and T4 (gross spend never falls) hold across processes. Amounts are exact:
integers of units of 10^-scale, as BudgetController keeps them; they read back as floats, as in
the Python ClampAI."""

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
    opens the same store.

    `url`: None (a new temporary file, removed when the creating process drops this object),
    `file:PATH` or a path (a file shared by unrelated processes on one machine), or
    `postgresql://...[#TASK]` (the shared ledger, docs/LEDGER.md: processes on any machine).
    A store is created with `budget`, or reopened if it holds the same budget; any other budget
    is a ValueError naming it.

    A file: every operation opens it, takes its exclusive lock (flock), reads the record,
    decides, rewrites it and closes it; so threads, forked children and unrelated processes
    exclude each other. PostgreSQL: every charge and refund is an entry of a task's shared trace
    (`clampai trace verify` reads it), committed by the C++ SharedKernel by compare-and-set, and
    the budget an invariant the kernel enforces; amounts have at most `scale` digits there
    (5, or the budget's if more). `ledger` lists this process's own charges and refunds, as in
    the Python ClampAI."""

    def __init__(self, budget: float, url: Optional[str] = None) -> None:
        total = _exact(budget, "budget")
        if total < 0:
            raise ValueError(f"Budget must be >= 0, got {budget}")
        scale = max(5, _digits(total))
        if scale > _MAX_SCALE or int(total.scaleb(scale)) > _MAX_UNITS:
            raise ValueError(f"budget {budget} does not fit 64-bit units with {scale} digits "
                             "after the point")
        self._total = total
        self._url = url
        self._log: List[Tuple[str, float, float]] = []
        self._local = threading.Lock()
        self._finalizer: Any = None
        self._pid = os.getpid()
        self._store: Any
        if url is not None and _is_postgres(url):
            self._path = ""
            self._store = _LedgerStore(os.fspath(url), total, scale)
            return
        if url is None:
            fd, self._path = tempfile.mkstemp(prefix="clampai-budget-", suffix=".json")
            os.close(fd)
            self._finalizer = weakref.finalize(self, _remove, self._path, os.getpid())
        else:
            self._path = _file_of(url)
        self._store = _FileStore(self._path, total)

    @property
    def path(self) -> str:
        """The file holding the budget ("" on PostgreSQL)."""
        return self._path

    def __getstate__(self) -> Dict[str, Any]:
        # A copy in another process (multiprocessing's spawn) shares the store; it never
        # removes the file, and starts its own process-local ledger.
        return {"total": self._total, "url": self._url, "path": self._path}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._total, self._url, self._path = state["total"], state["url"], state["path"]
        self._log, self._local, self._finalizer = [], threading.Lock(), None
        self._pid = os.getpid()
        self._store = self._reopen()

    def _reopen(self) -> Any:
        if self._url is not None and _is_postgres(self._url):
            return _LedgerStore(os.fspath(self._url), self._total,
                                max(5, _digits(self._total)))
        return _FileStore(self._path, self._total)

    def _backend(self) -> Any:
        if os.getpid() != self._pid:
            # A forked child: its own connection (the parent's is never used, nor closed, here).
            with self._local:
                if os.getpid() != self._pid:
                    _INHERITED.append(self._store)
                    self._store = self._reopen()
                    self._pid = os.getpid()
                    self._log = []
        return self._store

    # -- BudgetController's interface

    @property
    def budget(self) -> float:
        return float(self._total)

    @property
    def spent_gross(self) -> float:
        return float(self.exact()["spent_gross"])

    @property
    def spent_refunded(self) -> float:
        return float(self.exact()["spent_refunded"])

    @property
    def spent_net(self) -> float:
        return float(self.exact()["spent_net"])

    @property
    def spent(self) -> float:
        return self.spent_net

    @property
    def remaining(self) -> float:
        return float(self.exact()["remaining"])

    def exact(self) -> Dict[str, decimal.Decimal]:
        """budget, spent_gross, spent_refunded, spent_net, remaining as exact Decimals (one
        reading of the store)."""
        gross, refunded = self._backend().read()
        return {"budget": self._total, "spent_gross": gross, "spent_refunded": refunded,
                "spent_net": gross - refunded, "remaining": self._total - (gross - refunded)}

    def can_afford(self, cost: float) -> Tuple[bool, str]:
        amount = _cost(cost)
        gross, refunded = self._backend().read()
        if gross - refunded + amount <= self._total:
            return True, ""
        return False, (f"cannot afford {_number_text(amount)}: spent_net {gross - refunded}, "
                       f"remaining {self._total - (gross - refunded)}")

    def charge(self, action_id: str, cost: float) -> None:
        """Charges `cost` across all processes (T1: RuntimeError, changing nothing, if it does
        not fit what is left)."""
        amount = _cost(cost)
        self._backend().charge(action_id, amount)
        with self._local:
            self._log.append((action_id, float(amount), time.time()))

    def refund(self, action_id: str, cost: float) -> None:
        """Refunds `cost` (the net spend falls, the gross does not: T4). More than the net spend
        is refused with InvalidArgument, as BudgetController refuses it."""
        amount = _cost(cost)
        self._backend().refund(action_id, amount)
        with self._local:
            self._log.append((f"REFUND:{action_id}", -float(amount), time.time()))

    def utilization(self) -> float:
        e = self.exact()
        return 0.0 if self._total == 0 else float(e["spent_net"] / self._total)

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
        where = self._path or _redact(str(self._url))
        return f"ProcessSharedBudgetController({where}: {self.summary()})"


_INHERITED: List[Any] = []  # stores a forked child inherited: kept, never used or closed


def _refusal(action_id: str, amount: decimal.Decimal, remaining: decimal.Decimal) -> str:
    return (f"budget: cannot charge {_number_text(amount)} for `{action_id}`: remaining "
            f"{remaining}")


class _FileStore:
    """The budget in a file (one record, rewritten under the file's lock)."""

    def __init__(self, path: str, total: decimal.Decimal) -> None:
        self.path, self.total = path, total
        with _FileLock(self) as rec:
            if rec is not None and rec.amount(rec.total) != total:
                raise ValueError(f"{path} holds a budget of "
                                 f"{format(rec.amount(rec.total).normalize(), 'f')}, not "
                                 f"{format(total.normalize(), 'f')}")

    def read(self) -> Tuple[decimal.Decimal, decimal.Decimal]:
        with _FileLock(self) as rec:
            if rec is None:  # the file was empty: created now, nothing spent
                return decimal.Decimal(0), decimal.Decimal(0)
            return rec.amount(rec.gross), rec.amount(rec.refunded)

    def charge(self, action_id: str, amount: decimal.Decimal) -> None:
        with _FileLock(self, write=True) as rec:
            units = rec.units(amount)
            if rec.net + units > rec.total:
                raise RuntimeError(_refusal(action_id, amount, rec.amount(rec.total - rec.net)))
            rec.gross += units

    def refund(self, action_id: str, amount: decimal.Decimal) -> None:
        with _FileLock(self, write=True) as rec:
            units = rec.units(amount)
            if units > rec.net:
                raise InvalidArgument(
                    f"cannot refund {_number_text(amount)} for `{action_id}`: more than the "
                    f"net spend {rec.amount(rec.net)}")
            rec.refunded += units


class _LedgerStore:
    """The budget as a task on a shared ledger: `charge(amount)` and `refund(amount)` actions on
    the variables `gross` and `refunded`, and the invariant `gross - refunded <= budget`."""

    DEFAULT_TASK = "clampai-shared-budget"

    def __init__(self, url: str, total: decimal.Decimal, scale: int) -> None:
        from . import _clampai, build_model

        if scale > 9:
            raise ValueError(f"a budget on PostgreSQL has at most 9 digits after the point, not "
                             f"{scale}")
        self.url, self.total, self.scale = url, total, scale
        task = url.split("#", 1)[1] if "#" in url else self.DEFAULT_TASK
        amount = {"type": "decimal", "scale": scale}
        unit = format(decimal.Decimal(1).scaleb(-scale), "f")
        limit = format(total.quantize(decimal.Decimal(1).scaleb(-scale)), "f")
        spec = {
            "name": task,
            "variables": {"gross": dict(amount, initial="0"),
                          "refunded": dict(amount, initial="0")},
            "actions": [
                {"id": "charge", "cost": unit, "parameters": {"amount": dict(amount, min="0")},
                 "effects": [{"variable": "gross", "mode": "increment", "value": "amount"}]},
                {"id": "refund", "cost": unit, "parameters": {"amount": dict(amount, min="0")},
                 "requires": "amount <= gross - refunded",
                 "effects": [{"variable": "refunded", "mode": "increment", "value": "amount"}]},
            ],
            "invariants": [{"name": "budget", "check": f"gross - refunded <= {limit}"}],
            "budget": {"total": "1000000000", "min_action_cost": unit, "scale": scale},
        }
        try:
            self.kernel = _clampai._SharedKernel(build_model(spec), url)
        except InvalidArgument as err:
            if "for another spec" in str(err):  # the task's genesis has another model
                raise ValueError(f"{_redact(url)} holds another budget than "
                                 f"{_number_text(total)} for the task `{task}` ({err})") from None
            raise

    def read(self) -> Tuple[decimal.Decimal, decimal.Decimal]:
        self.kernel.refresh()
        state = self.kernel.state
        return state["gross"], state["refunded"]

    def _units_fit(self, amount: decimal.Decimal) -> None:
        if _digits(amount) > self.scale:
            raise ValueError(f"{amount} has more digits after the point than this shared "
                             f"budget's {self.scale}")

    def charge(self, action_id: str, amount: decimal.Decimal) -> None:
        self._units_fit(amount)
        outcome = self.kernel.execute("charge", {"amount": amount})
        if not outcome.approved:
            gross, refunded = self.read()
            raise RuntimeError(_refusal(action_id, amount, self.total - (gross - refunded)))

    def refund(self, action_id: str, amount: decimal.Decimal) -> None:
        self._units_fit(amount)
        outcome = self.kernel.execute("refund", {"amount": amount})
        if not outcome.approved:
            gross, refunded = self.read()
            raise InvalidArgument(
                f"cannot refund {_number_text(amount)} for `{action_id}`: more than the net "
                f"spend {gross - refunded}")


def _is_postgres(url: Any) -> bool:
    return isinstance(url, str) and url.startswith(("postgresql://", "postgres://"))


def _redact(url: str) -> str:
    """`url` without a password."""
    import re
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


class _FileLock:
    """`with _FileLock(store, write) as record`: the file opened and exclusively locked,
    its record read (None when the file was empty: it is then created with the budget), and
    on a clean exit of a writer the record written back in one pwrite."""

    def __init__(self, owner: "_FileStore", write: bool = False) -> None:
        self.owner, self.write = owner, write
        self.fd = -1
        self.rec: Optional[_Record] = None

    def __enter__(self) -> Any:
        path = self.owner.path
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as err:
            raise InvalidArgument(f"{path}: cannot open the shared budget file: "
                                  f"{err.strerror}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            data = os.pread(self.fd, _RECORD, 0)
            if not data:
                total = self.owner.total
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
    path = url[len("file:"):] if url.startswith("file:") else url
    if not path or "://" in url:
        raise ValueError(f"url {url!r}: expected `file:PATH`, a path, `postgresql://...`, or None")
    return path

