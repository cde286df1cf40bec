"""The files `manage.py export` writes: JSON lines here, Parquet in console/exportparquet.py
(imported only for Parquet: pyarrow adds about 57 MB to a process). Both take rows one at a
time and hold at most one row group, so an export of any size costs bounded memory."""

import json
from datetime import datetime


def open_rows(fmt: str, stream, what: str, outlinks: bool = False, to_terminal: bool = False):
    """A writer of `what` rows ("documents" or "urls") in format `fmt` ("jsonl" or "parquet") to
    `stream` (binary for Parquet): .write(row) each, then .close()."""
    if fmt == "parquet":
        from .exportparquet import ParquetFile, schema_for

        return ParquetFile(stream, schema_for(what, outlinks))
    return JsonLinesFile(stream, to_terminal)


class JsonLinesFile:
    """One JSON object per line, UTF-8, timestamps in ISO 8601 with their offset."""

    def __init__(self, out, to_terminal: bool = False):
        self._out = out
        # The command's stdout (an OutputWrapper) would end each write with a newline of its own.
        self._ending = {"ending": ""} if to_terminal else {}

    def write(self, row: dict) -> None:
        self._out.write(json.dumps(row, ensure_ascii=False, default=_json_value) + "\n", **self._ending)

    def close(self) -> None:
        pass  # the caller owns the stream


def _json_value(value):
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")
