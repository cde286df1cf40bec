"""Are real PDFs found by their own words? Each PDF of the corpus (bench/pdftext.py) is read
as the crawler reads it (indexer/pdf.py, default caps) and indexed as a document; then, for
each PDF, words that pdftotext finds in that PDF and in no other (letters only, at least 6
characters, at least twice in it) are searched for, and the share whose PDF comes in the
top 10 is reported.

    python -m bench.pdfsearch var/pdfcorpus [--words 3]                  # SQLite, in memory
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/crawlerweb_bench python -m bench.pdfsearch var/pdfcorpus

The index lives in a scratch test database (created, migrated and dropped by Django's
test machinery), never in the database DATABASE_URL names.
"""

import argparse
import collections
import hashlib
import os
import sys
from pathlib import Path

import django


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--words", type=int, default=3, help="words searched per PDF")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    from bench.pdftext import pdftotext, words
    from frontier.models import Host, Url
    from indexer import service
    from indexer.backends import get_search_backend
    from indexer.models import Document
    from indexer.pdf import PdfProblem, parse_pdf

    setup_test_environment()
    test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        paths = sorted(Path(args.corpus).glob("*.pdf"))
        references = {path.name: words(pdftotext(path, settings.CRAWLER_PDF_MAX_PAGES)) for path in paths}
        frequency = collections.Counter(word for found in references.values() for word in found)
        host = Host.objects.create(origin="http://pdfs.test")
        documents, unread = {}, []
        for number, path in enumerate(paths):
            address = f"http://pdfs.test/{path.name}"
            try:
                parsed = parse_pdf(path.read_bytes(), address, max_pages=settings.CRAWLER_PDF_MAX_PAGES,
                                   max_links=settings.CRAWLER_MAX_LINKS_PER_PAGE,
                                   max_chars=settings.CRAWLER_PDF_MAX_CHARS)
            except PdfProblem as problem:
                unread.append((path.name, problem.outcome))
                continue
            url = Url.objects.create(url_key=number + 1, url=address, host=host)
            documents[path.name] = Document.objects.create(
                url=url, address=address, title=parsed.title, body=parsed.text, content_type="application/pdf",
                content_hash=hashlib.sha256(path.read_bytes()).hexdigest(), indexed=True)
        get_search_backend().add(list(documents.values()))
        asked = found = 0
        missed = []
        for name, reference in references.items():
            own = sorted((word for word, count in reference.items()
                          if frequency[word] == 1 and count >= 2 and len(word) >= 6 and word.isalpha()),
                         key=lambda word: hashlib.sha1(word.encode()).hexdigest())[: args.words]
            for word in own:
                asked += 1
                results, _ = service.search_page(word, 1, 10)
                if any(hit.url == f"http://pdfs.test/{name}" for hit in results):
                    found += 1
                else:
                    missed.append((name, word))
        print(f"{connection.vendor}: {len(documents)} of {len(paths)} PDFs indexed (unread: {unread}); "
              f"{found} of {asked} own words ({found / max(1, asked):.1%}) bring their PDF into the top 10")
        print(f"missed: {missed}", file=sys.stderr)
    finally:
        connection.creation.destroy_test_db(test_db, verbosity=0)


if __name__ == "__main__":
    main()
