"""Search page and its JSON twin. Public read-only: they show only what was indexed.

Both take q (see indexer.query: words and identifiers, "phrases", site:host; site: alone
lists the site's pages by URL) and page;
both report how many pages matched, how many pages of results there are (a page past the
last gets none, and says which is the last: indexer.paging), whether the answer fell back
to pages with any of the words, and whether the query was cut.
"""

from django.http import JsonResponse
from django.shortcuts import render

from . import paging, service

PAGE_SIZE = 10


def _query(request):
    return request.GET.get("q", "").strip(), paging.page_number(request.GET.get("page", "1"))


def search_page(request):
    query, page = _query(request)
    context = {"query": query, "results": None, "counts": service.document_counts(), "page": page}
    if query:
        context["results"], context["paging"] = service.search_page(query, page, PAGE_SIZE)
    return render(request, "indexer/search.html", context)


def search_json(request):
    query, page = _query(request)
    if not query:
        return JsonResponse({"error": "missing query parameter q"}, status=400)
    results, pages = service.search_page(query, page, PAGE_SIZE)
    if results.query.empty and not results.query.lists_sites:
        return JsonResponse({"error": "the query has no words or site: to search for", "query": results.query.text},
                            status=400)
    return JsonResponse({
        "query": results.query.text, "page": page, "last_page": pages.last_page, "total": results.total,
        "total_is_lower_bound": results.total_is_lower_bound, "any_word": results.any_word,
        "truncated": results.query.truncated, "sites": results.query.sites, "order": results.order,
        "next_page": page + 1 if pages.has_next else None,
        "results": [{**h.as_dict(), "cached_url": h.cached_url} for h in results],
    })
