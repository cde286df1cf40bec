"""The frontier's URLs as rows for an export (console's `manage.py export urls`): read in
id order, a batch at a time (keyset paging: `id > last`), so a million URLs cost one batch
of memory and no OFFSET scan."""

from .models import Url

URL_COLUMNS = ("id", "url", "host__origin", "kind", "state", "outcome", "depth", "priority", "last_status",
               "attempts", "next_fetch_at", "last_fetched_at", "last_observation", "observations", "change_rate",
               "recrawl_interval", "content_hash", "text_hash", "simhash", "created_at")


def url_rows(origin: str | None = None, batch: int = 2000):
    """Every URL (of one host's origin, if given) as a dict of URL_COLUMNS ("host" for
    host__origin), in id order."""
    urls = Url.objects.order_by("id")
    if origin:
        urls = urls.filter(host__origin=origin)
    last = 0
    while True:
        rows = list(urls.filter(id__gt=last).values(*URL_COLUMNS)[:batch])
        for row in rows:
            row["host"] = row.pop("host__origin")
            yield row
        if len(rows) < batch:
            return
        last = rows[-1]["id"]


def url_count(origin: str | None = None) -> int:
    urls = Url.objects.all()
    return (urls.filter(host__origin=origin) if origin else urls).count()
