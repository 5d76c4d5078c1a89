"""Errors a user can act on. Each names the file, the record (line/frame/row) and the reason."""

from __future__ import annotations


class SeqheurError(Exception):
    """Base class: the CLI prints these as one line and exits 1."""


class IngestError(SeqheurError):
    """A trace could not be read. ``record`` is a 1-based line, frame or row number."""

    def __init__(self, path: object, reason: str, *, record: int | None = None,
                 kind: str = "record", column: str | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.record = record
        self.kind = kind
        self.column = column
        where = self.path
        if record is not None:
            where += f": {kind} {record}"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"{where}: {reason}")


class SchemaError(SeqheurError):
    """A table does not follow the request-table contract; names the first offending column."""

    def __init__(self, column: str, reason: str) -> None:
        self.column = column
        self.reason = reason
        super().__init__(f"column {column!r}: {reason}")


class SpecError(SeqheurError):
    """A detector/table/policy/profile spec string could not be understood."""


class ProfileError(SeqheurError):
    """A disk profile is missing, malformed or of an unknown schema version."""


class TraceLossWarning(UserWarning):
    """A trace was read with losses (reading stopped early, records skipped for a reason that
    loses data). The CLI prints it as a WARNING line; ``seqheur --strict`` makes it exit 1."""
