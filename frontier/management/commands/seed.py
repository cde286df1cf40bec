import sys

from django.core.management.base import CommandError

from common.schema_check import MigratedCommand
from frontier import service
from frontier.management.scope_args import add_scope_arguments, scope_from_options
from frontier.vocabulary import Rejection


class Command(MigratedCommand):
    help = ("Add seed URLs to the frontier (normalized, filtered, deduplicated), each with a scope: "
            "where the links found from it may lead. A bare origin (example.org, 127.0.1.3:8300) means "
            "http:// before it. Prints each verdict: ok, warning (accepted, but its address is one the "
            "crawler refuses) or rejected:<reason> with the limit it breaks. --file reads one URL per "
            "line (blank lines and # comments ignored); a line that is no URL stops the whole file, "
            "with every such line named, before anything is added.")

    def add_arguments(self, parser):
        parser.add_argument("urls", nargs="*", help="URLs, or bare origins (host, host:port)")
        parser.add_argument("--file", help="a file of seeds, one per line ('-': standard input)")
        add_scope_arguments(parser)

    def handle(self, *args, **options):
        spec = scope_from_options(options)
        urls, where = list(options["urls"]), [f"argument {n + 1}" for n in range(len(options["urls"]))]
        if options["file"]:
            lines = read_seed_file(options["file"])
            errors = [f"line {number}: {reason}\t{url}" for number, url in lines
                      if (reason := service.seed_rejection(url)) and _not_a_url(reason)]
            if errors:
                raise CommandError(f"{options['file']}: {len(errors)} line(s) are not seeds; nothing was added:\n"
                                   + "\n".join(errors))
            urls += [url for _, url in lines]
            where += [f"line {number}" for number, _ in lines]
        if not urls:
            raise CommandError("give seed URLs, or --file with one per line")
        result = service.add_seeds(urls, spec)
        for index, (url, verdict) in enumerate(zip(urls, result.verdicts)):
            place = f"{where[index]}\t" if options["file"] else ""
            if verdict.startswith("rejected:"):
                detail = result.details.get(index)
                self.stdout.write(f"{place}{verdict}\t{url}" + (f"\t({detail})" if detail else ""))
            elif index in result.warnings:
                self.stdout.write(f"{place}warning\t{verdict}\t{result.warnings[index][1]}")
            else:
                self.stdout.write(f"{place}ok\t{verdict}")
        warned = f", {len(result.warnings)} with a warning" if result.warnings else ""
        self.stdout.write(f"{result.admitted} new, {result.known} already known{warned}, "
                          f"{sum(result.rejected.values())} rejected; scope: {spec.kind}")


# What makes a line no seed at all (a typo to fix), as opposed to a seed the limits in force
# refuse (excluded domain, depth, quota: reported per line like any verdict).
_SYNTAX = {Rejection.EMPTY, Rejection.UNPARSABLE, Rejection.SCHEME, Rejection.CREDENTIALS, Rejection.HOST,
           Rejection.URL_TOO_LONG}


def _not_a_url(reason: str) -> bool:
    return reason.split(":")[0] in _SYNTAX


def read_seed_file(path: str) -> list[tuple[int, str]]:
    """(line number, seed) for every line that holds one: blank lines and comments (a line
    starting with #, or text after " #") left out."""
    try:
        handle = sys.stdin if path == "-" else open(path, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    seeds = []
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                text = line.split(" #", 1)[0].split("\t#", 1)[0].strip()
                if text and not text.startswith("#"):
                    seeds.append((number, text))
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return seeds
