import json

from common.schema_check import MigratedCommand
from indexer import service


class Command(MigratedCommand):
    help = "Search the index; prints ranked results (URL, title, snippet), a page of --limit at a time."

    def add_arguments(self, parser):
        parser.add_argument("query")
        parser.add_argument("--limit", type=int, default=10, help="results per page (1-100)")
        parser.add_argument("--page", type=int, default=1, help="which page of results, from 1")
        parser.add_argument("--json", action="store_true", help="a JSON list, best first")

    def handle(self, *args, **options):
        limit, page = max(1, min(options["limit"], 100)), max(1, options["page"])
        hits, pages = service.search_page(options["query"], page, limit)
        past = (f"there {'is only 1 page' if pages.last_page == 1 else f'are only {pages.last_page} pages'} "
                f"of {limit} results: page {page} is past the last (--page {pages.last_page})\n")
        if options["json"]:
            self.stdout.write(json.dumps([h.as_dict() for h in hits], ensure_ascii=False, indent=2))
            if pages.past_last:
                self.stderr.write(past)
            return
        if not hits.total:
            self.stdout.write("no results")
            return
        more = "more than " if hits.total_is_lower_bound else ""
        some = " with some of the words (no page has all of them)" if hits.any_word else ""
        some += f" on {', '.join(hits.query.sites)}, by URL" if hits.order == "url" else ""
        self.stdout.write(f"{more}{hits.total} page{'s' if hits.total != 1 else ''}{some}"
                          + ("" if pages.past_last else f" · page {page} of {pages.last_page}") + "\n")
        if pages.past_last:
            self.stdout.write(past)
        for rank, hit in enumerate(hits, pages.first):
            score = "" if hits.order == "url" else f"  [{hit.score:.3f}]"  # a site listing: by URL
            self.stdout.write(f"{rank}. {hit.title or '(untitled)'}{score}\n"
                              f"   {hit.url}\n   {hit.snippet_text}\n")
