"""The frontier's URLs as rows for an export (console's `manage.py export urls`): read in
id order, a batch at a time (keyset paging: `id > last`), so a million URLs cost one batch
of memory and no OFFSET scan."""

from common.paging import in_id_order

from .models import Url

URL_COLUMNS = ("id", "url", "host__origin", "kind", "state", "outcome", "depth", "score", "last_status",
               "attempts", "next_fetch_at", "last_fetched_at", "last_observation", "observations", "change_rate",
               "recrawl_interval", "content_hash", "text_hash", "simhash", "created_at")


def url_rows(origin: str | None = None, batch: int = 2000):
    """Every URL (of one host's origin, if given) as a dict of URL_COLUMNS ("host" for
    host__origin), in id order."""
    for row in in_id_order(_urls(origin), URL_COLUMNS, batch):
        row["host"] = row.pop("host__origin")
        yield row


def url_count(origin: str | None = None) -> int:
    return _urls(origin).count()


def _urls(origin: str | None):
    return Url.objects.filter(host__origin=origin) if origin else Url.objects.all()
