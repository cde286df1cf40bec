"""The scope options `crawl` and `seed` share: --scope, --include, --exclude."""

from django.conf import settings
from django.core.management.base import CommandError

from frontier import service
from frontier.models import ScopeKind


def add_scope_arguments(parser) -> None:
    parser.add_argument("--scope", choices=ScopeKind.values, default=None,
                        help="where links from the seeds may lead: the seed's host, its registered domain, "
                             "URLs under its path, or the open web (default CRAWLER_DEFAULT_SCOPE, "
                             f"now {settings.CRAWLER_DEFAULT_SCOPE!r})")
    parser.add_argument("--include", action="append", default=[], metavar="REGEX",
                        help="also crawl URLs matching this regular expression (repeatable)")
    parser.add_argument("--exclude", action="append", default=[], metavar="REGEX",
                        help="never crawl URLs matching this regular expression (repeatable)")


def scope_from_options(options) -> service.ScopeSpec:
    try:
        return service.parse_spec(options["scope"] or settings.CRAWLER_DEFAULT_SCOPE,
                                  options["include"], options["exclude"])
    except service.InvalidScope as exc:
        raise CommandError(str(exc)) from None


def describe_scopes(summary: dict) -> list[str]:
    """Lines for a human: each scope with its seeds and what it left out."""
    lines = []
    for s in summary["scopes"]:
        where = {"host": "host", "domain": "domain", "prefix": "prefix", "web": "the open web"}[s["kind"]]
        text = f"{where} {s['anchor']}".rstrip()
        if s["include"]:
            text += f", also {' | '.join(s['include'])}"
        if s["exclude"]:
            text += f", never {' | '.join(s['exclude'])}"
        lines.append(f"{text} ({s['seeds']} seed{'s' if s['seeds'] != 1 else ''}, "
                     f"{s['out_of_scope']} links left out)")
    hidden = summary["total"] - len(summary["scopes"])
    if hidden > 0:
        lines.append(f"… and {hidden} more scopes")
    if summary["unscoped_seeds"]:
        lines.append(f"the open web ({summary['unscoped_seeds']} seeds from before scopes existed)")
    return lines
