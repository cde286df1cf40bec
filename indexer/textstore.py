"""A page's text as the database keeps it.

The visible text is the biggest thing a page leaves in the database (22 KB on the sample
web, more on documentation sites). PostgreSQL compresses large values itself (TOAST, lz4
since migration indexer/0004). SQLite does not, so there the text is kept
zlib-compressed, level 1, as a BLOB in the same column (an SQLite column holds any type):
a third of the bytes for ~0.1 ms of CPU per page, paid in the parse pool (crawl/pipeline.py
analyse prepares it) and undone only for what is read back (a snippet's prefix, the
admin's view, a re-index). Rows written as text by earlier releases read as they are.
"""

import zlib

from django.db import models

LEVEL = 1


def for_database(text: str, vendor: str) -> str | bytes:
    """The value to write for `text` on a database of this vendor."""
    if vendor == "sqlite" and text:
        return zlib.compress(text.encode("utf-8", "surrogatepass"), LEVEL)
    return text


def from_database(value) -> str:
    if isinstance(value, (bytes, memoryview)):
        return zlib.decompress(value).decode("utf-8", "surrogatepass")
    return value if value is not None else ""


def prefix(value, chars: int) -> str:
    """The first `chars` characters, decompressing no more than it takes."""
    if isinstance(value, (bytes, memoryview)):
        # UTF-8 takes at most 4 bytes a character: decompress that much, cut whole characters.
        data = zlib.decompressobj().decompress(value, 4 * chars)
        return data.decode("utf-8", "ignore")[:chars]
    return (value or "")[:chars]


class CompressedTextField(models.TextField):
    """A TextField kept compressed where the database would not (see the module doc)."""

    def get_db_prep_value(self, value, connection, prepared=False):
        value = super().get_db_prep_value(value, connection, prepared)
        return for_database(value, connection.vendor) if isinstance(value, str) else value

    def from_db_value(self, value, expression, connection):
        return from_database(value)
