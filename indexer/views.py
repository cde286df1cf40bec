"""Search page and its JSON twin. Public read-only: they show only what was indexed.

Both take q (see indexer.query: words and identifiers, "phrases", site:host) and page;
both report how many pages matched, whether the answer fell back to pages with any of the
words, and whether the query was cut.
"""

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render

from . import service

PAGE_SIZE = 10
MAX_PAGE = 100


def _query(request):
    query = request.GET.get("q", "").strip()
    try:
        page = max(1, min(int(request.GET.get("page", "1")), MAX_PAGE))
    except ValueError:
        page = 1
    return query, page


def _pages(results, page: int) -> dict:
    last = min(MAX_PAGE, (results.total + PAGE_SIZE - 1) // PAGE_SIZE,
               (settings.CRAWLER_SEARCH_CANDIDATES + PAGE_SIZE - 1) // PAGE_SIZE)
    return {"page": page, "last_page": max(1, last), "has_next": page < last}


def search_page(request):
    query, page = _query(request)
    results = service.search(query, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE) if query else None
    context = {"query": query, "results": results, "counts": service.document_counts(), "page": page}
    if results is not None:
        context.update(_pages(results, page), first=(page - 1) * PAGE_SIZE + 1)
    return render(request, "indexer/search.html", context)


def search_json(request):
    query, page = _query(request)
    if not query:
        return JsonResponse({"error": "missing query parameter q"}, status=400)
    results = service.search(query, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    if results.query.empty:
        return JsonResponse({"error": "the query has no words to search for", "query": results.query.text}, status=400)
    pages = _pages(results, page)
    return JsonResponse({
        "query": results.query.text, "page": page, "total": results.total,
        "total_is_lower_bound": results.total_is_lower_bound, "any_word": results.any_word,
        "truncated": results.query.truncated, "sites": results.query.sites,
        "next_page": page + 1 if pages["has_next"] else None,
        "results": [h.as_dict() for h in results],
    })
