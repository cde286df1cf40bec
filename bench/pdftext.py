"""PDF text libraries side by side on real PDFs: words recovered against poppler's pdftotext
(the yardstick, not a run-time dependency) and CPU ms per page.

    python -m bench.pdftext corpus var/pdfcorpus      # once: real PDFs from Debian packages
    python -m bench.pdftext var/pdfcorpus [--max-pages 200] [--libraries pypdfium2,pypdf,pdfminer,crawler]

`corpus` downloads a few Debian documentation packages (`apt-get download`, no install),
unpacks their PDFs and keeps a varied sample: at most a few files per (package, producer),
round-robin over those groups, only documents where pdftotext finds at least 50 words
(figures and scans hold none), up to --count files. The PDFs are real ones nobody here
wrote: TeX (pdfTeX, XeTeX, LuaTeX, dvips + Ghostscript or Distiller), groff, ReportLab,
DBLaTeX, PowerPoint, in English, Arabic, Chinese, Korean, Russian and more.

The run reads the first --max-pages pages of each PDF (the crawler's CRAWLER_PDF_MAX_PAGES)
with pdftotext and with each library, each extraction in a fresh forked child with a
timeout, and scores a library's words against pdftotext's as a multiset: recall =
shared words / pdftotext's words (a PDF is "read" at >= 0.80), extra = the library's words /
pdftotext's. Words: NFKC, lower case, runs of letters and digits, each CJK character a word
of its own (their text has no spaces, and line ends fall differently per library), bidi
marks dropped (pdftotext puts them around right-to-left runs). CPU is
the child's own process time for open + extract, per page.
"""

import argparse
import collections
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

PACKAGES = [
    "python-reportlab-doc", "debian-reference-en", "gnuplot-doc", "r-doc-pdf", "asymptote-doc",
    "octave-doc", "texlive-lang-arabic", "texlive-lang-cyrillic", "texlive-lang-chinese",
    "texlive-lang-korean", "texlive-fonts-recommended-doc", "texlive-humanities-doc",
    "ghostscript-doc", "groff", "maxima-doc",
]
MIN_REFERENCE_WORDS = 50
READ_RECALL = 0.80
TIMEOUT_S = 120

_WORD = re.compile(r"\w+")
# Bidirectional marks and embeddings (pdftotext wraps right-to-left runs in them): format
# characters, not letters, and no word boundary either.
_BIDI_CONTROLS = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def words(text):
    """Multiset of words; CJK characters count one by one (see the module docstring)."""
    found = collections.Counter()
    for token in _WORD.findall(_BIDI_CONTROLS.sub("", unicodedata.normalize("NFKC", text)).lower()):
        if _CJK.search(token):
            found.update(_CJK.findall(token))
            rest = _CJK.sub(" ", token).split()
            found.update(rest)
        else:
            found[token] += 1
    return found


def pdftotext(path, max_pages):
    done = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", "-l", str(max_pages), str(path), "-"],
                          capture_output=True, timeout=TIMEOUT_S)
    return done.stdout.decode("utf-8", "replace")


def page_count(path):
    done = subprocess.run(["pdfinfo", str(path)], capture_output=True, timeout=60)
    match = re.search(rb"^Pages:\s+(\d+)", done.stdout, re.M)
    return int(match.group(1)) if match else 0


def producer(path):
    done = subprocess.run(["pdfinfo", str(path)], capture_output=True, timeout=60)
    match = re.search(rb"^Producer:\s+(.*)$", done.stdout, re.M)
    return match.group(1).decode("utf-8", "replace").strip() if match else ""


# --- the candidates: each takes the PDF's bytes and a page limit, returns (text, pages read)

def with_pypdfium2(data, max_pages):
    import pypdfium2

    pdf = pypdfium2.PdfDocument(data)
    try:
        pages = min(len(pdf), max_pages)
        parts = []
        for index in range(pages):
            page = pdf[index]
            textpage = page.get_textpage()
            parts.append(textpage.get_text_bounded())
            textpage.close()
            page.close()
        return "\n".join(parts), pages
    finally:
        pdf.close()


def with_pypdf(data, max_pages):
    import io

    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    pages = min(len(reader.pages), max_pages)
    return "\n".join(reader.pages[i].extract_text() or "" for i in range(pages)), pages


def with_pdfminer(data, max_pages):
    import io

    from pdfminer.high_level import extract_text
    from pdfminer.pdfpage import PDFPage

    pages = min(sum(1 for _ in PDFPage.get_pages(io.BytesIO(data))), max_pages)
    return extract_text(io.BytesIO(data), maxpages=max_pages), pages


CRAWLER_PDF_MAX_CHARS = 1_000_000  # the crawler's default cap on a PDF's stored text


def with_crawler(data, max_pages):
    """What the crawler stores: indexer/pdf.py with its default caps (pages and characters)."""
    from indexer.pdf import PdfProblem, parse_pdf

    try:
        parsed = parse_pdf(data, "http://bench.test/", max_pages=max_pages, max_links=1000,
                           max_chars=CRAWLER_PDF_MAX_CHARS)
    except PdfProblem:
        return "", 0
    import pypdfium2

    counted = pypdfium2.PdfDocument(data)  # pages read: for ms/page (opening again costs little)
    pages = min(len(counted), max_pages)
    counted.close()
    return parsed.text, pages


LIBRARIES = {"pypdfium2": with_pypdfium2, "pypdf": with_pypdf, "pdfminer": with_pdfminer, "crawler": with_crawler}


def _child(extract, data, max_pages, out):
    import resource

    started = time.process_time()
    try:
        text, pages = extract(data, max_pages)
        out.send((text, pages, time.process_time() - started, None,
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
    except Exception as error:  # a library's failure on one PDF is a result, not the end of the run
        out.send(("", 0, time.process_time() - started, f"{type(error).__name__}: {error}"[:120], 0))


def run_one(extract, data, max_pages):
    """(text, pages, cpu seconds, error, peak KiB) from a forked child, or a timeout."""
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=_child, args=(extract, data, max_pages, send))
    child.start()
    send.close()
    if receive.poll(TIMEOUT_S):
        result = receive.recv()
    else:
        result = ("", 0, TIMEOUT_S, "timeout", 0)
    child.kill()
    child.join()
    return result


def score(found, reference):
    total = sum(reference.values())
    shared = sum(min(count, found[word]) for word, count in reference.items())
    return shared / total, sum(found.values()) / total


def measure(corpus, max_pages, names):
    for name in names:  # imported once in the parent, so every forked child starts warm
        LIBRARIES[name](_tiny_pdf(), 1)
    paths = sorted(Path(corpus).glob("*.pdf"))
    rows = {name: [] for name in names}
    print(f"{len(paths)} PDFs in {corpus}, first {max_pages} pages of each", file=sys.stderr)
    for path in paths:
        data = path.read_bytes()
        reference = words(pdftotext(path, max_pages))
        if sum(reference.values()) < MIN_REFERENCE_WORDS:
            print(f"  skip {path.name}: pdftotext finds {sum(reference.values())} words", file=sys.stderr)
            continue
        line = [path.name[:48].ljust(48)]
        for name in names:
            text, pages, cpu, error, peak = run_one(LIBRARIES[name], data, max_pages)
            recall, extra = score(words(text), reference) if not error else (0.0, 0.0)
            rows[name].append((path.name, recall, extra, pages, cpu, error, peak))
            line.append(f"{name} {recall:.2f} {1000 * cpu / max(1, pages):.0f}ms/p" + (f" ({error})" if error else ""))
        print("  " + "  ".join(line), file=sys.stderr)
    return rows


def report(rows):
    print()
    print("| library | PDFs | read (recall >= 0.80) | mean recall | median recall | extra words | "
          "errors/timeouts | pages | CPU ms/page | peak RSS MiB (max) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, results in rows.items():
        if not results:
            continue
        recalls = sorted(r[1] for r in results)
        read = sum(1 for r in recalls if r >= READ_RECALL)
        pages = sum(r[3] for r in results if not r[5])
        cpu = sum(r[4] for r in results if not r[5])
        errors = sum(1 for r in results if r[5])
        extra = sum(r[2] for r in results if not r[5]) / max(1, len(results) - errors)
        peak = max(r[6] for r in results) / 1024
        print(f"| {name} | {len(results)} | {read} ({read / len(results):.0%}) | "
              f"{sum(recalls) / len(recalls):.3f} | {recalls[len(recalls) // 2]:.3f} | {extra:.2f} | "
              f"{errors} | {pages} | {1000 * cpu / max(1, pages):.1f} | {peak:.0f} |")
    print()
    for name, results in rows.items():
        unread = [(r[0], round(r[1], 2), r[5]) for r in results if r[1] < READ_RECALL]
        if unread:
            print(f"{name} below {READ_RECALL}: {unread}")


def _tiny_pdf():
    """A one-page PDF with one word, written out by hand (offsets computed)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               None,
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    stream = b"BT /F1 12 Tf 20 100 Td (warm) Tj ET"
    objects[3] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def build_corpus(dest, count, per_group):
    """Download PACKAGES, unpack, keep a varied sample of their PDFs in dest."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pdfcorpus-") as work:
        work = Path(work)
        subprocess.run(["apt-get", "download", *PACKAGES], cwd=work, check=True)
        candidates = []
        for deb in sorted(work.glob("*.deb")):
            package = deb.name.split("_")[0]
            unpacked = work / package
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
            for found in sorted(unpacked.rglob("*.pdf*")):
                if not found.is_file() or not found.name.endswith((".pdf", ".pdf.gz")):
                    continue
                name = f"{package}__{found.name.removesuffix('.gz')}"
                target = work / "all" / name
                target.parent.mkdir(exist_ok=True)
                if found.name.endswith(".gz"):
                    subprocess.run(f"gunzip -c '{found}' > '{target}'", shell=True, check=True)
                else:
                    shutil.copyfile(found, target)
                candidates.append((package, target))
        groups = collections.defaultdict(list)
        for package, path in candidates:
            family = re.sub(r"[\d.()]+", "", producer(path)).strip().split(" ")[0].lower()
            if sum(words(pdftotext(path, 20)).values()) >= MIN_REFERENCE_WORDS:
                groups[(package, family)].append(path)
        queues = [paths[:per_group] for _, paths in sorted(groups.items())]
        chosen = []
        while len(chosen) < count and any(queues):
            for queue in queues:
                if queue and len(chosen) < count:
                    chosen.append(queue.pop(0))
        for path in chosen:
            shutil.copyfile(path, dest / path.name)
        print(f"{len(chosen)} PDFs from {len(groups)} (package, producer) groups in {dest}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "corpus":
        parser = argparse.ArgumentParser(description="build the PDF corpus")
        parser.add_argument("command")
        parser.add_argument("dest")
        parser.add_argument("--count", type=int, default=60)
        parser.add_argument("--per-group", type=int, default=4)
        args = parser.parse_args()
        build_corpus(args.dest, args.count, args.per_group)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--max-pages", type=int, default=int(os.environ.get("CRAWLER_PDF_MAX_PAGES", 200)))
    parser.add_argument("--libraries", default="pypdfium2,pypdf,pdfminer",
                        help=f"of {', '.join(LIBRARIES)} (crawler: what indexer/pdf.py stores, with its caps)")
    args = parser.parse_args()
    for tool in ("pdftotext", "pdfinfo"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} missing: apt-get install poppler-utils (the yardstick only)")
    started = time.monotonic()
    report(measure(args.corpus, args.max_pages, args.libraries.split(",")))
    print(f"\n({time.monotonic() - started:.0f} s wall)")


if __name__ == "__main__":
    main()
