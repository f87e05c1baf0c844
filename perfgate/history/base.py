"""What every history store is: the interface the commands and queries use (a Protocol), the
error a store raises, and the clock records are stamped with. Two stores implement it, both
over the same SQL (sqlstore.py): an SQLite file (store.py) and a PostgreSQL database
(postgres.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from types import TracebackType
from typing import Any, Protocol

from perfgate.common.errors import PerfgateError
from perfgate.history.model import RunRecord


class HistoryError(PerfgateError):
    """A history database that cannot be used, or a run that contradicts one kept."""


class HistoryStore(Protocol):
    """A history: runs kept, loaded back, a kernel's points, retention. Used as a context
    manager: the connection closes on leaving."""

    @property
    def where(self) -> str:
        """The file or the URL (its password hidden), as messages name it."""
        ...

    @property
    def schema_version(self) -> int: ...

    def store(self, record: RunRecord) -> bool:
        """True when stored, False when this very run was kept already; another payload
        under a run id already kept raises HistoryError."""
        ...

    def load(self, run_id: str) -> RunRecord | None: ...

    def run_ids(self) -> list[str]: ...

    def baselines(self) -> list[str]:
        """The baselines the kept runs checked, sorted."""
        ...

    def run_ids_of(self, baseline: str) -> list[str]:
        """The runs that checked `baseline`, oldest first."""
        ...

    def series_rows(self, kernel: str, metric: str | None) -> list[tuple[Any, ...]]:
        """A kernel's points, oldest first (then by metric), as sqlstore.SERIES_ROW names."""
        ...

    def prune(self, *, before: str | None = None, keep: int | None = None) -> list[str]: ...

    def close(self) -> None: ...

    def __enter__(self) -> HistoryStore: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def now() -> str:
    """The time a record is made: ISO 8601 in UTC, which sorts as text in any store."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")
