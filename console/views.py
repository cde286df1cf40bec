"""The REST API (seeds, limits, metrics) and the dashboard. Every API answer is JSON; every
refusal says why (see payloads.py for the validation and auth.py for who gets in)."""

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.staticfiles import finders
from django.db import DatabaseError
from django.http import FileResponse, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from frontier import service as frontier

from . import health, history, metrics, payloads
from .auth import admin_api, allow_methods, error

REJECTION_MESSAGES = {
    "empty": "empty URL",
    "unparsable": "not a parsable URL",
    "scheme": "only http, https and gemini URLs are crawled",
    "credentials": "URLs with user names or passwords are refused",
    "host": "no valid host name",
    "url_too_long": "longer than the URL length limit",
    "excluded_domain": "its domain is excluded",
    "depth_limit": "beyond the depth limit",
    "redirect_limit": "too many redirects",
    "trap_repeated_segments": "looks like a crawler trap (repeated path segments)",
    "trap_pattern": "its URL pattern was stopped as a crawler trap (its pages brought no new text)",
    "mirror_host": "its host was set aside as a mirror of another host's pages (resume it under URL patterns)",
    "host_quota": "its host has reached the per-host URL quota",
    "domain_quota": "its registered domain has reached the per-domain URL quota",
    "out_of_scope": "outside the scope asked for: an exclude pattern matches it",
}


def _bad(exc: payloads.BadPayload) -> JsonResponse:
    return error(exc.status, exc.message)


@admin_api
@allow_methods("POST")
def seed_urls(request):
    try:
        urls, scope = payloads.seed_urls(payloads.read_json_object(request))
    except payloads.BadPayload as exc:
        return _bad(exc)
    try:
        result = frontier.add_seeds(urls, scope)
    except DatabaseError:
        return error(503, "the database refused the change; nothing was applied, try again")
    rejections = []
    for index, verdict in enumerate(result.verdicts):
        if verdict.startswith("rejected:"):
            reason = verdict.removeprefix("rejected:")
            message = REJECTION_MESSAGES.get(reason, reason)
            if index in result.details:  # the limit it breaks
                message += f" ({result.details[index]})"
            rejections.append({"index": index, "url": urls[index], "reason": reason, "message": message})
    return JsonResponse({
        "accepted": len(urls) - len(rejections),
        "added": result.admitted,  # new to the frontier
        "alreadyKnown": len(urls) - len(rejections) - result.admitted,  # known, or repeated in the list
        "rejected": len(rejections),
        "rejections": rejections,
        # Accepted, but not fetched as things stand (an address the SSRF guard refuses).
        "warnings": [{"index": index, "url": urls[index], "warning": code, "message": message}
                     for index, (code, message) in sorted(result.warnings.items())],
        "scope": {"kind": scope.kind, "include": list(scope.include), "exclude": list(scope.exclude)},
    })


def _limits_document(limits, **extra) -> dict:
    return {
        "depthLimit": limits.depth_limit,
        "urlLengthLimit": limits.url_length_limit,
        "maxUrlsPerHost": limits.max_urls_per_host,
        "excludedDomains": sorted(limits.excluded_domains),
        "version": limits.version,
        **extra,
    }


@admin_api
@allow_methods("GET", "POST")
def url_limit(request):
    if request.method == "GET":
        return JsonResponse(_limits_document(frontier.current_limits()))
    try:
        change = payloads.url_limits(payloads.read_json_object(request))
    except payloads.BadPayload as exc:
        return _bad(exc)
    try:
        applied = frontier.update_limits(**change.changes, exclude_domains=change.exclude_domains)
    except DatabaseError:
        return error(503, "the database refused the change; nothing was applied, try again")
    return JsonResponse(_limits_document(applied.limits, addedDomains=applied.added_domains,
                                         stoppedQueuedUrls=applied.stopped_urls))


@admin_api
@allow_methods("GET", "POST")
def url_trusted(request):
    """The trusted domains (frontier/importance.py): GET lists them, POST adds, reweighs or
    (weight null) drops some."""
    if request.method == "POST":
        try:
            weights = payloads.trusted_domains(payloads.read_json_object(request))
        except payloads.BadPayload as exc:
            return _bad(exc)
        try:
            listed = frontier.set_trusted_domains(weights)
        except DatabaseError:
            return error(503, "the database refused the change; nothing was applied, try again")
    else:
        listed = frontier.trusted_domains()
    return JsonResponse({"trustedDomains": [{"domain": domain, "weight": weight} for domain, weight in listed]})


# ?format= names an exposition format; the Accept header it stands for picks the encoder.
_FORMAT_ACCEPT = {"json": "application/json", "prometheus": "text/plain",
                  "openmetrics": "application/openmetrics-text"}


@admin_api
@allow_methods("GET")
def metrics_view(request):
    wanted = request.GET.get("format", "")
    if wanted and wanted not in _FORMAT_ACCEPT:
        return error(400, "format must be json, prometheus or openmetrics")
    accept = _FORMAT_ACCEPT.get(wanted) or request.headers.get("Accept", "")
    figures = metrics.snapshot()
    if _prefers_prometheus(accept):
        body, content_type = metrics.prometheus(figures, accept)
        return HttpResponse(body, content_type=content_type)
    return JsonResponse(figures)


def _prefers_prometheus(accept: str) -> bool:
    # Prometheus asks for openmetrics-text and text/plain; browsers and JSON clients don't.
    return "application/json" not in accept and ("openmetrics-text" in accept or accept.startswith("text/plain"))


@staff_member_required
def dashboard(request):
    refresh = settings.CRAWLER_DASHBOARD_REFRESH_SECONDS
    try:
        refresh = min(3600.0, max(1.0, float(request.GET.get("refresh", refresh))))  # clamps inf and nan too
    except ValueError:
        pass
    return render(request, "console/dashboard.html", {
        "refresh_ms": int(refresh * 1000),
        "ranges": [(m, _range_label(m)) for m in history.offered_ranges()],
        "range_minutes": history.range_minutes(request.GET.get("minutes")),
        "sample_seconds": settings.CRAWLER_METRICS_SAMPLE_SECONDS,
    })


def _range_label(minutes: int) -> str:
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h"


@admin_api
@allow_methods("GET")
def dashboard_data(request):
    """Everything the dashboard draws: the metrics sample, the history over the range asked
    for (?minutes=, one of history.RANGES_MINUTES), and the live panels (health.py)."""
    minutes = history.range_minutes(request.GET.get("minutes"))
    now = timezone.now()
    figures = metrics.snapshot()
    return JsonResponse({
        "now": now.isoformat(),  # the page measures ages against the server's clock
        # ... and shows times in the server's zone, named, as the admin and the search page do
        # (common/humanize.py): the IANA name for the browser's Intl, the name people read.
        "time_zone": settings.TIME_ZONE,
        "time_zone_name": timezone.localtime(now).tzname(),
        "metrics": figures,
        "history": history.series(minutes),
        "range_minutes": minutes,
        "health": health.host_health(),
        "liveness": health.liveness(now, broker_answers=figures.get("fetch_queues") is not None),
    })


def favicon(request):
    """/favicon.ico, which browsers ask for on every page (the admin's included)."""
    path = finders.find("console/favicon.ico")
    response = FileResponse(open(path, "rb"), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response
