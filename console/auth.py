"""Who may use the API: an API key (Authorization: Bearer …) or a staff session.

Sessions are cookies, so a session's unsafe request must pass Django's CSRF check; a
bearer key is not sent by browsers on their own, so key requests need none (the reasoning
Django REST framework's SessionAuthentication follows). Everyone else: 401 (who are you?)
or 403 (not allowed).
"""

import functools

from django.http import HttpRequest, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from .keys import check_key


def error(status: int, message: str, **extra) -> JsonResponse:
    response = JsonResponse({"error": message, **extra}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="crawlerweb"'
    return response


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason  # the reason itself, not Django's HTML failure page


def _csrf_failure(request: HttpRequest) -> str | None:
    check = _CsrfCheck(lambda req: None)
    check.process_request(request)
    return check.process_view(request, None, (), {})


def admin_api(view):
    """Let in API keys and active staff sessions; answer everything else in JSON."""

    @csrf_exempt  # checked below, for sessions only
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        header = request.headers.get("Authorization", "")
        if header:
            scheme, _, key = header.partition(" ")
            if scheme.lower() != "bearer" or not key.strip():
                return error(401, "Authorization must be 'Bearer <API key>'")
            request.api_key = check_key(key.strip())
            if request.api_key is None:
                return error(401, "invalid or revoked API key")
            return view(request, *args, **kwargs)
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return error(401, "authentication required: an API key (Authorization: Bearer <key>) "
                              "or a staff session")
        if not (user.is_active and user.is_staff):
            return error(403, "staff only")
        if request.method not in ("GET", "HEAD", "OPTIONS", "TRACE"):
            failure = _csrf_failure(request)
            if failure:
                return error(403, f"CSRF check failed: {failure}")
        return view(request, *args, **kwargs)

    return wrapped


def allow_methods(*methods: str):
    """Answer other methods 405 in JSON, with the Allow header (GET implies HEAD)."""
    allowed = list(methods) + (["HEAD"] if "GET" in methods and "HEAD" not in methods else [])

    def decorate(view):
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs):
            if request.method not in allowed:
                response = error(405, f"{request.method} is not allowed here; use {' or '.join(methods)}",
                                 allowed=allowed)
                response["Allow"] = ", ".join(allowed)
                return response
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
