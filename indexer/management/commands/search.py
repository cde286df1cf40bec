import json

from crawlerweb.schema_check import MigratedCommand
from indexer import service


class Command(MigratedCommand):
    help = "Search the index; prints ranked results (URL, title, snippet)."

    def add_arguments(self, parser):
        parser.add_argument("query")
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument("--json", action="store_true", help="a JSON list, best first")

    def handle(self, *args, **options):
        hits = service.search(options["query"], limit=max(1, min(options["limit"], 100)))
        if options["json"]:
            self.stdout.write(json.dumps([h.as_dict() for h in hits], ensure_ascii=False, indent=2))
            return
        if not hits:
            self.stdout.write("no results")
        else:
            more = "more than " if hits.total_is_lower_bound else ""
            some = " with some of the words (no page has all of them)" if hits.any_word else ""
            self.stdout.write(f"{more}{hits.total} page{'s' if hits.total != 1 else ''}{some}\n")
        for rank, hit in enumerate(hits, 1):
            self.stdout.write(f"{rank}. {hit.title or '(untitled)'}  [{hit.score:.3f}]\n"
                              f"   {hit.url}\n   {hit.snippet_text}\n")
