"""Documents (one per fetched HTML page) and content fingerprints for duplicate detection.

The full-text index itself is not a Django model: each search backend creates its own
structure in a migration (a GIN-indexed tsvector table on PostgreSQL, an FTS5 virtual
table on SQLite), the way Wagtail's database search backends do.
"""

from django.db import models
from django.utils import timezone

from .textstore import CompressedTextField


class Document(models.Model):
    url = models.OneToOneField("frontier.Url", on_delete=models.CASCADE, related_name="document")
    # Its column keeps its first name, `address` (the raw SQL of the backends says so), for
    # the previous release's workers during an upgrade (STYLE.md 15); in the crawler an
    # address is a server's IP.
    page_url = models.TextField("URL", db_column="address", help_text="the page URL, kept here so search needs no join")
    title = models.TextField(blank=True, default="")
    headings = models.TextField(blank=True, default="")
    body = CompressedTextField(blank=True, default="", help_text="visible text (capped; compressed on SQLite: "
                               "indexer/textstore.py)")
    boilerplate = models.TextField(blank=True, default="", db_default="",
                                   help_text="where the body is the page's navigation, banners, footers, sidebars: "
                                   "'start-end' character ranges, space-separated (snippets skip them)")
    content_hash = models.CharField(max_length=64, db_index=True)
    content_type = models.CharField(max_length=100, blank=True, default="")
    # How the bytes became text (issue 53): the WHATWG encoding name, and which rule chose it.
    encoding = models.CharField(max_length=40, blank=True, default="", db_default="",
                                help_text="the encoding the page was decoded with (WHATWG name)")
    encoding_source = models.CharField(max_length=10, blank=True, default="", db_default="",
                                       help_text="what chose the encoding: bom, http, meta, xml, "
                                       "detected or default")
    language = models.CharField(max_length=16, blank=True, default="", db_default="", db_index=True,
                                help_text="the document's language (BCP 47 primary tag, e.g. 'en', "
                                "'zh'); empty when not identified")
    status = models.SmallIntegerField(default=200)
    size = models.IntegerField(default=0, help_text="body bytes")
    noindex = models.BooleanField(default=False)
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="duplicates"
    )
    indexed = models.BooleanField(default=False)
    # A hint, not an order (indexer/canonicals.py): while the URL this names stands for the
    # page, the page is stored but not indexed.
    canonical_key = models.BigIntegerField(null=True, blank=True, help_text=(
        "url_key of the other URL its <link rel=canonical> names (frontier.normalize.url_key)"))
    fetched_at = models.DateTimeField(default=timezone.now)
    # Where the raw response is archived (archive.warc); empty when archiving was off.
    warc_file = models.CharField(max_length=255, blank=True, default="", db_default="")
    warc_offset = models.BigIntegerField(null=True, blank=True)
    warc_length = models.IntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["canonical_key"], name="document_canonical",
                                condition=models.Q(canonical_key__isnull=False))]

    def __str__(self):
        return self.page_url


class ContentFingerprint(models.Model):
    """First document seen with a given content hash. The primary key makes the
    exact-duplicate test race-free across workers: whoever inserts first is the original."""

    content_hash = models.CharField(max_length=64, primary_key=True)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")


class SimhashBlock(models.Model):
    """The near-duplicate lookup (indexer/neardup.py): each indexed document's 64-bit SimHash
    cut into CRAWLER_NEAR_DUPLICATE_BITS + 1 blocks. Two SimHashes at most that many bits
    apart agree exactly on at least one block (the pigeonhole argument of Manku, Jain & Das
    Sarma, WWW 2007), so a page's candidates are the rows sharing one of its blocks.

    Named "band" until issue 52 (a word the frontier's score bands use): the table and the
    column keep their first names, so the previous release's workers keep writing them while
    an upgrade rolls out (STYLE.md 15)."""

    block = models.BigIntegerField(db_index=True, db_column="band", help_text="block number << 32 | the block's bits")
    simhash = models.BigIntegerField()
    text_hash = models.CharField(max_length=32, blank=True, default="",
                                 help_text="of the normalized text: with 0 bits the texts must be equal")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")

    class Meta:
        db_table = "indexer_simhashband"
