"""Parquet files for `manage.py export`: an explicit schema, written a row group at a time
(pyarrow's ParquetWriter). A group ends at ROW_GROUP_ROWS rows, or earlier once its rows'
page text reaches ROW_GROUP_CHARS characters (10,000 documents of 200,000 characters each
would otherwise be 2 GB in memory at once, and past the 2 GB a string column's offsets
reach), so memory is one group's whatever the number of rows."""

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_ROWS = 10_000
ROW_GROUP_CHARS = 16_000_000
# zstd: 50,000 of the export bench's documents made 45 MB against snappy's 79 MB, in less
# CPU time (less to write).
PARQUET_COMPRESSION = "zstd"

_TIME = pa.timestamp("us", tz="UTC")  # Django's datetimes: aware, UTC, microseconds

# The rows' keys in the order the exports yield them (indexer/export.py, frontier/export.py),
# with the database's types: every integer column as int64 (a SimHash is a signed 64-bit
# integer, ids and offsets are bigint), hashes as their hex strings.
DOCUMENT_SCHEMA = pa.schema([
    ("id", pa.int64()), ("frontier_url_id", pa.int64()), ("url", pa.string()), ("title", pa.string()),
    ("headings", pa.string()), ("text", pa.string()), ("main_text", pa.string()), ("status", pa.int64()),
    ("content_type", pa.string()), ("size", pa.int64()), ("encoding", pa.string()), ("encoding_source", pa.string()),
    ("fetched_at", _TIME), ("content_hash", pa.string()), ("text_hash", pa.string()), ("simhash", pa.int64()),
    ("indexed", pa.bool_()), ("noindex", pa.bool_()), ("duplicate_of_id", pa.int64()),
    ("warc_file", pa.string()), ("warc_offset", pa.int64()), ("warc_length", pa.int64()),
    ("language", pa.string()),
])
OUTLINKS_FIELD = pa.field("outlinks", pa.list_(pa.string()))  # null: no archived response to read them from
URL_SCHEMA = pa.schema([
    ("id", pa.int64()), ("url", pa.string()), ("kind", pa.string()), ("state", pa.string()),
    ("outcome", pa.string()), ("depth", pa.int64()), ("score", pa.int64()), ("last_status", pa.int64()),
    ("attempts", pa.int64()), ("next_fetch_at", _TIME), ("last_fetched_at", _TIME),
    ("last_observation", pa.string()), ("observations", pa.int64()), ("change_rate", pa.float64()),
    ("recrawl_interval", pa.float64()), ("content_hash", pa.string()), ("text_hash", pa.string()),
    ("simhash", pa.int64()), ("created_at", _TIME), ("host", pa.string()),
])
# The columns whose size grows with the page, counted toward ROW_GROUP_CHARS.
_WIDE_COLUMNS = ("title", "headings", "text", "main_text", "outlinks")


def schema_for(what: str, outlinks: bool = False) -> pa.Schema:
    schema = DOCUMENT_SCHEMA if what == "documents" else URL_SCHEMA
    return schema.append(OUTLINKS_FIELD) if outlinks else schema


class ParquetFile:
    """Rows buffered into row groups of at most `rows` rows (and about `chars` characters of
    page text), each written as it fills: the memory of one group, whatever the total."""

    def __init__(self, out, schema: pa.Schema, rows: int = ROW_GROUP_ROWS, chars: int = ROW_GROUP_CHARS):
        self._writer = pq.ParquetWriter(out, schema, compression=PARQUET_COMPRESSION)
        self._schema, self._rows, self._chars = schema, rows, chars
        self._wide = [name for name in _WIDE_COLUMNS if name in schema.names]
        self._buffer, self._buffered_chars = [], 0

    def write(self, row: dict) -> None:
        self._buffer.append(row)
        for name in self._wide:
            value = row.get(name)
            if value:
                self._buffered_chars += len(value) if isinstance(value, str) else sum(map(len, value))
        if len(self._buffer) >= self._rows or self._buffered_chars >= self._chars:
            self._flush()

    def close(self) -> None:
        self._flush()
        self._writer.close()

    def _flush(self) -> None:
        if not self._buffer:
            return
        # A list per column: pyarrow converts that about 4x faster than a list of dicts.
        columns = {name: [row.get(name) for row in self._buffer] for name in self._schema.names}
        table = pa.Table.from_pydict(columns, schema=self._schema)
        # The rows' Python objects go before the group is encoded: the two never share the peak.
        del columns
        self._buffer, self._buffered_chars = [], 0
        self._writer.write_table(table)
