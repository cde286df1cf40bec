"""Search page and its JSON twin. Public read-only: they show only what was indexed."""

from django.http import JsonResponse
from django.shortcuts import render

from . import service

PAGE_SIZE = 10
MAX_QUERY_CHARS = 200


def _query(request):
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    try:
        page = max(1, min(int(request.GET.get("page", "1")), 100))
    except ValueError:
        page = 1
    return query, page


def search_page(request):
    query, page = _query(request)
    hits = service.search(query, limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE) if query else []
    return render(request, "indexer/search.html", {
        "query": query, "hits": hits[:PAGE_SIZE], "page": page,
        "has_next": len(hits) > PAGE_SIZE, "counts": service.document_counts(),
    })


def search_json(request):
    query, page = _query(request)
    if not query:
        return JsonResponse({"error": "missing query parameter q"}, status=400)
    hits = service.search(query, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
    return JsonResponse({"query": query, "page": page, "results": [h.as_dict() for h in hits]})
