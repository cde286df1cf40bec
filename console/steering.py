"""The steering API: pause and resume the crawl, act on hosts, recrawl URLs.

The same functions as the admin's actions (frontier/steering.py), with the same audit;
the same authentication as the rest of the API (auth.py), and on top of it a staff session
needs the permission to change hosts (a bearer key is an administrator's)."""

from django.db import DatabaseError
from django.http import JsonResponse

from frontier import service as frontier

from . import payloads
from .auth import admin_api, allow_methods, error

# URL path word -> frontier host action
_HOST_ACTIONS = {"pause": "pause", "resume": "resume", "fetch-now": "fetch_now", "reset-breaker": "reset_breaker",
                 "refetch-robots": "refetch_robots"}


def actor_of(request) -> str:
    key = getattr(request, "api_key", None)
    if key is not None:
        return f"key:{key.name}"
    return f"api:{request.user.get_username()}"


def _may_steer(request) -> JsonResponse | None:
    if getattr(request, "api_key", None) is None and not request.user.has_perm("frontier.change_host"):
        return error(403, "steering needs the permission to change hosts (frontier.change_host)")
    return None


def _answer(result: frontier.ActionResult, **extra) -> JsonResponse:
    return JsonResponse({"action": result.action, "changed": result.changed, **result.detail, **extra})


@admin_api
@allow_methods("GET")
def crawl_state(request):
    limits = frontier.current_limits()
    return JsonResponse({"paused": limits.paused, "pausedHosts": len(limits.paused_hosts)})


@admin_api
@allow_methods("POST")
def crawl_pause(request):
    return _crawl_switch(request, frontier.pause_crawl)


@admin_api
@allow_methods("POST")
def crawl_resume(request):
    return _crawl_switch(request, frontier.resume_crawl)


def _crawl_switch(request, action):
    refused = _may_steer(request) or _empty_body(request)
    if refused:
        return refused
    try:
        return _answer(action(actor_of(request)))
    except DatabaseError:
        return error(503, "the database refused the change; nothing was applied, try again")


def _empty_body(request) -> JsonResponse | None:
    # Pause and resume take no arguments; a body is accepted only when it is {}.
    if not request.body:
        return None
    try:
        data = payloads.read_json_object(request)
    except payloads.BadPayload as exc:
        return error(exc.status, exc.message)
    return error(400, f"unknown field(s): {', '.join(sorted(data))}; this endpoint takes none") if data else None


@admin_api
@allow_methods("POST")
def host_action(request, action):
    if action not in _HOST_ACTIONS:
        return error(404, f"unknown host action {action!r}; one of {', '.join(_HOST_ACTIONS)}")
    return _act_on(request, "hosts", frontier.MAX_HOSTS_PER_ACTION, "host", frontier.host_ids_for,
                   lambda ids, actor: frontier.host_action(_HOST_ACTIONS[action], ids, actor), "unknownHosts")


@admin_api
@allow_methods("POST")
def urls_recrawl(request):
    return _act_on(request, "urls", frontier.MAX_URLS_PER_ACTION, "URL", frontier.url_ids_for, frontier.recrawl_now,
                   "unknownUrls")


def _act_on(request, field: str, at_most: int, what: str, resolve, act, unknown_key: str) -> JsonResponse:
    """Validate {field: [id or URL, …]}, resolve the references to ids, act on the ones that
    exist (404 when none does), and report the others under unknown_key."""
    refused = _may_steer(request)
    if refused:
        return refused
    try:
        refs = payloads.references(payloads.read_json_object(request), field, at_most, what)
    except payloads.BadPayload as exc:
        return error(exc.status, exc.message)
    try:
        ids, unknown = resolve(refs)
        if not ids:
            return error(404, f"no known {what} among {field}", **{unknown_key: unknown})
        result = act(ids, actor_of(request))
    except DatabaseError:
        return error(503, "the database refused the change; nothing was applied, try again")
    return _answer(result, **{unknown_key: unknown})
