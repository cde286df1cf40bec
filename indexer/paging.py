"""Pages of results: one rule for the search page, search.json and `manage.py search`.

A ranked search orders CRAWLER_SEARCH_CANDIDATES matches exactly, so that is as deep as its
results go (more would be an arbitrary order); a site listing (site: and no words) is in
URL order, as deep as the count goes (CRAWLER_SEARCH_COUNT_LIMIT). The last page is the one holding the last
result shown; a page past it is answered with the count and the last page's number and no
hits (never "page 100 of 9"), without ranking anything.
"""

from dataclasses import dataclass

from django.conf import settings

from .query import Query

# A page number above this is read as this: no answer can have so many pages, and JSON
# clients count in doubles.
MAX_PAGE_NUMBER = 1_000_000


def page_number(value) -> int:
    """A requested page (a query string's text): 1 for anything that is not a positive number."""
    try:
        return max(1, min(int(value), MAX_PAGE_NUMBER))
    except (TypeError, ValueError):
        return 1


def deepest_result(query: Query) -> int:
    """How many results of this query can be shown at most, over all its pages: a site
    listing (site: and no words, by URL) as many as are counted."""
    return settings.CRAWLER_SEARCH_COUNT_LIMIT if query.lists_sites else settings.CRAWLER_SEARCH_CANDIDATES


@dataclass(frozen=True)
class Paging:
    page: int  # as requested (1 or more)
    per_page: int
    total: int  # pages matching (a lower bound past CRAWLER_SEARCH_COUNT_LIMIT)
    deepest: int  # results shown at most over all pages (deepest_result)

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @property
    def first(self) -> int:
        """The rank of this page's first result."""
        return self.offset + 1

    @property
    def shown(self) -> int:
        """Results that can be shown over all pages."""
        return min(self.total, self.deepest)

    @property
    def last_page(self) -> int:
        """The number of pages of results: 0 when nothing matched."""
        return -(-self.shown // self.per_page)

    @property
    def past_last(self) -> bool:
        """Something matched, and this page is after the last one."""
        return self.total > 0 and self.page > self.last_page

    @property
    def has_next(self) -> bool:
        return self.page < self.last_page

    @property
    def cut(self) -> bool:
        """More pages matched than the results can show."""
        return self.total > self.deepest
