"""Page records as Parquet (pyarrow): the schema, and a writer of bounded row groups.

One column per record field (:mod:`crawlproj.exports.records`), typed: ``fetched_at`` a UTC
timestamp in milliseconds, ``links`` a list of ``{url, anchor, nofollow}`` structs, counts
as 64-bit integers. Row groups hold at most :data:`ROW_GROUP_ROWS` rows or
:data:`ROW_GROUP_BYTES` of Arrow memory, whichever comes first (on documentation pages, about
1,000 pages), so a writer holds one row group at most: exporting 6,442 real pages took a peak
RSS of 243 MB at 32 MB, 271 at 64, 371 in one row group. Pages are zstd-compressed. DuckDB, pandas and Spark read the files as they are
(docs/exporting.md has the schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

_LINK = pa.struct([("url", pa.string()), ("anchor", pa.string()), ("nofollow", pa.bool_())])
_HEADER = pa.struct([("name", pa.string()), ("value", pa.string())])
#: The Parquet type of each record field (a field not listed is a string).
TYPES: dict[str, pa.DataType] = {
    "status": pa.int32(),
    "fetched_at": pa.timestamp("ms", tz="UTC"),
    "links": pa.list_(_LINK),
    "warc_offset": pa.int64(),
    "depth": pa.int32(),
    "bytes": pa.int64(),
    "fetch_duration": pa.float64(),
    "rendered": pa.bool_(),
    "text_chars": pa.int64(),
    "markdown_chars": pa.int64(),
    "response_headers": pa.list_(_HEADER),
    "request_headers": pa.list_(_HEADER),
}
#: Columns of few distinct values, dictionary-encoded (the others are not: a text column's
#: dictionary only costs time before Parquet gives up on it).
DICTIONARY = ("content_type", "language", "warc_file", "host", "charset", "duplicate_kind", "limited", "body_encoding")
ROW_GROUP_ROWS = 2000
ROW_GROUP_BYTES = 32 * 2**20  # of Arrow memory
BATCH_ROWS = 100
COMPRESSION = "zstd"


def schema(fields: Mapping[str, str]) -> pa.Schema:
    """The schema of records of ``fields`` ({record field: column name}, in order)."""
    return pa.schema([pa.field(column, TYPES.get(name, pa.string())) for name, column in fields.items()])


class ParquetRecords:
    """Writes records (dicts of column name -> value) to ``file`` as Parquet, a row group at a time.

    Records become Arrow batches :data:`BATCH_ROWS` at a time (Python holds no more of them:
    a page's record is mostly strings, two to four bytes a character), and a row group is
    written once its batches hold :data:`ROW_GROUP_ROWS` rows or :data:`ROW_GROUP_BYTES`."""

    def __init__(self, file: IO[bytes], fields: Mapping[str, str]) -> None:
        self.schema = schema(fields)
        self.writer = pq.ParquetWriter(file, self.schema, compression=COMPRESSION,
                                       use_dictionary=[c for n, c in fields.items() if n in DICTIONARY])
        self._rows: list[dict[str, Any]] = []
        self._batches: list[pa.RecordBatch] = []
        self._batched_rows = self._batched_bytes = 0
        self.rows = 0

    def write(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= BATCH_ROWS:
            self._batch()
            if self._batched_rows >= ROW_GROUP_ROWS or self._batched_bytes >= ROW_GROUP_BYTES:
                self.flush()

    def _batch(self) -> None:
        batch = pa.RecordBatch.from_pylist(self._rows, schema=self.schema)
        self._rows = []
        self._batches.append(batch)
        self._batched_rows += batch.num_rows
        self._batched_bytes += batch.nbytes

    def flush(self) -> None:
        """Write what is held as one row group."""
        if self._rows:
            self._batch()
        if self._batches:
            table = pa.Table.from_batches(self._batches, schema=self.schema)
            self.writer.write_table(table, row_group_size=table.num_rows)
            self.rows += table.num_rows
            self._batches, self._batched_rows, self._batched_bytes = [], 0, 0
            pa.default_memory_pool().release_unused()  # jemalloc keeps freed pages a while otherwise

    def close(self) -> None:
        """The last row group and the footer (a file with no rows still has its schema)."""
        self.flush()
        self.writer.close()
