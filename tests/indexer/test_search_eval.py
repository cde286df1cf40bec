"""The known-item search evaluation (bench/searcheval): its genindex parser, query cleaning
and scoring on small inputs, and the whole path (a small Sphinx-like site served on
loopback, crawled by our crawler, its index turned into queries, scored with the real
search) against a deliberately broken ranking. No apt, no baseline venv."""

import json
import random
from io import StringIO

import pytest
from django.core.management import call_command

from bench.searcheval import genindex, queries
from bench.searcheval.metrics import Outcome, Query, evaluate, page_key, percentile, rank_of, score
from bench.searcheval.oursearch import search_urls
from bench.searcheval.serve import resolve, run_sites
from indexer.backends import get_search_backend

# --- the genindex parser and query cleaning ------------------------------------------------

UL_INDEX = """<html><body><div class="body">
<h1 id="index">Index</h1>
<table style="width: 100%" class="indextable genindextable"><tr>
  <td style="width: 33%; vertical-align: top;"><ul>
    <li><a href="library/os.path.html#os.path.join">join() (in module os.path)</a></li>
    <li><a href="library/pathlib.html#pathlib.Path.read_text">read_text() (pathlib.Path method)</a>,
        <a href="library/pathlib.html#index-3">[1]</a></li>
    <li>
      --settings
      <ul>
        <li><a href="ref/django-admin.html#cmdoption-settings">django-admin command line option</a></li>
        <li><a href="ref/django-admin.html#cmdoption-check-settings">check command line option</a></li>
      </ul></li>
    <li><a href="c-api/sys.html#index-1">abort()</a>
      <ul>
        <li><a href="library/os.html#os.abort">(in module os)</a></li>
      </ul></li>
    <li><a href="https://example.org/elsewhere.html">off-site only</a></li>
    <li><a href="#local">on this page only</a></li>
  </ul></td>
  <td style="width: 33%; vertical-align: top;"><ul>
    <li><a href="ref/contrib/admin/index.html#module-django.contrib.admin">django.contrib.admin (module)</a></li>
    <li><a href="install.html#pl-perl"><strong>PL/Perl</strong></a></li>
  </ul></td>
</tr></table></div></body></html>"""

DL_INDEX = """<html><body>
<table width="100%" class="indextable genindextable"><tr><td width="33%" valign="top">
<dl>
  <dt><a href="core/connections.html#sqlalchemy.engine.Connection.execute">execute()
      (sqlalchemy.engine.Connection method)</a></dt>
  <dd><dl>
    <dt><a href="orm/session_api.html#sqlalchemy.orm.Session.execute">(sqlalchemy.orm.Session method)</a></dt>
  </dl></dd>
  <dt><a href="core/engines.html#sqlalchemy.create_engine">create_engine() (in module sqlalchemy)</a></dt>
</dl></td></tr></table></body></html>"""


def test_parse_genindex_reads_sphinx_list_markup_with_nested_entries():
    entries = {e.term: e for e in genindex.parse_genindex(UL_INDEX)}
    assert set(entries) == {"join() (in module os.path)", "read_text() (pathlib.Path method)", "--settings",
                            "abort()", "django.contrib.admin (module)", "PL/Perl"}  # no page: no entry
    assert entries["join() (in module os.path)"].pages == ("library/os.path.html",)
    assert entries["read_text() (pathlib.Path method)"].pages == ("library/pathlib.html",)  # [1]: same page
    settings = entries["--settings"]
    assert settings.pages == ("ref/django-admin.html",)
    assert settings.subentries == ("django-admin command line option", "check command line option")
    assert entries["abort()"].pages == ("c-api/sys.html", "library/os.html")
    assert entries["django.contrib.admin (module)"].pages == ("ref/contrib/admin/index.html",)


def test_parse_genindex_reads_definition_list_markup_and_resolves_against_the_index_page():
    entries = {e.term: e for e in genindex.parse_genindex(DL_INDEX, "api/genindex.html")}
    assert entries["execute() (sqlalchemy.engine.Connection method)"].pages == (
        "api/core/connections.html", "api/orm/session_api.html")
    assert entries["execute() (sqlalchemy.engine.Connection method)"].subentries == ("(sqlalchemy.orm.Session method)",)
    assert entries["create_engine() (in module sqlalchemy)"].pages == ("api/core/engines.html",)
    assert genindex.parse_genindex("") == []


def test_a_split_index_is_read_from_genindex_all_when_there_is_one(tmp_path):
    (tmp_path / "genindex.html").write_text("<p>letters only</p>")
    (tmp_path / "genindex-A.html").write_text(UL_INDEX)
    assert genindex.index_files(tmp_path) == [tmp_path / "genindex-A.html", tmp_path / "genindex.html"]
    (tmp_path / "genindex-all.html").write_text(DL_INDEX)
    assert genindex.index_files(tmp_path) == [tmp_path / "genindex-all.html"]
    assert {e.term for e in genindex.read_index(tmp_path)} == {
        "execute() (sqlalchemy.engine.Connection method)", "create_engine() (in module sqlalchemy)"}


@pytest.mark.parametrize("term, query, kind", [
    ("join() (in module os.path)", "join", "words"),
    ("os.path.join() (in module os.path)", "os.path.join", "dotted"),
    ("read_text() (pathlib.Path method)", "read_text", "snake_case"),
    ("current_database (PostgreSQL function)", "current_database", "snake_case"),
    ("null (django.db.models.Field attribute)", "null", "words"),
    ("abs() (built-in function)", "abs", "words"),
    ("--settings", "--settings", "option"),
    ("PL/Perl", "PL/Perl", "words"),
    ("__init__() (object method)", "__init__", "words"),
    ("f(x) (outer (inner) qualifier)", "f", "words"),
    ("  Field   lookups ,", "Field lookups", "words"),
    ("$ (dollar)", "$", "words"),
])
def test_clean_query_and_kind(term, query, kind):
    assert queries.clean_query(term) == query
    assert queries.query_kind(query) == kind


def test_build_drops_wordless_ambiguous_and_cross_site_queries_and_balances_sites():
    entry = genindex.IndexEntry
    sites = {
        "a": [entry("os.path.join() (in module os.path)", ("lib/os.html",)),
              entry("abort() (in module os)", ("lib/os.html",)),
              entry("abort() (asyncio.Barrier method)", ("lib/asyncio.html",)),  # same query, other page
              entry("$ (dollar)", ("re.html",)),
              entry("admin (module)", ("admin/index.html", "admin/")),  # one page, two spellings
              entry("shared_name", ("x.html",))] + [entry(f"term_{i}", (f"t{i}.html",)) for i in range(10)],
        "b": [entry("shared_name", ("y.html",)), entry("only_b", ("b.html",)), entry("gone", ("missing.html",))],
    }
    items, summary = queries.build(sites, limit=6, seed=3, exists=lambda site, page: page != "missing.html")
    assert summary["a"]["dropped"] == {"no_words": 1, "ambiguous": 1, "ambiguous_across_sites": 1}
    assert summary["b"]["dropped"] == {"missing_page": 1, "ambiguous_across_sites": 1}
    assert [(i.site, i.query) for i in items if i.site == "b"] == [("b", "only_b")]
    assert len(items) == 6 and summary["a"]["sampled"] == 5  # b's unused share goes to a
    assert {i.query for i in items}.isdisjoint({"abort", "$", "shared_name", "gone"})
    again, _ = queries.build(sites, limit=6, seed=3, exists=lambda site, page: page != "missing.html")
    assert again == items  # deterministic
    admin = queries.build({"a": sites["a"][4:5]}, limit=5)[0]
    assert [(i.query, i.target) for i in admin] == [("admin", "admin/")]


def test_scoring_on_planted_rankings():
    base = "http://127.0.9.1:1/"
    q1, q2, q3 = (Query("one", base + "a.html"), Query("two", base + "dir/", "dotted"),
                  Query("three", base + "c.html"))
    outcomes = [Outcome(q1, (base + "a.html#top", base + "b.html"), 0.001),
                Outcome(q2, (base + "x.html", base + "dir/index.html"), 0.003),
                Outcome(q3, (), 0.002)]
    m = score(outcomes)
    assert (m.queries, m.no_result) == (3, 1)
    assert m.mrr == pytest.approx((1 + 0.5 + 0) / 3)
    assert (m.success_at_1, m.success_at_10) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert m.latency_ms_median == pytest.approx(2.0) and m.latency_ms_p95 == pytest.approx(3.0)
    assert m.mrr_by_kind == {"dotted": {"queries": 1, "mrr": 0.5}, "words": {"queries": 2, "mrr": 0.5}}
    assert rank_of([base + f"p{i}.html" for i in range(11)] + [base + "a.html"], base + "a.html") is None  # past 10
    assert page_key("HTTP://127.0.9.1:1/dir/index.html#x") == page_key("http://127.0.9.1:1/dir/")
    assert percentile([], 0.95) is None


def test_the_server_serves_files_under_the_root_only(tmp_path):
    root = tmp_path / "html"
    (root / "ref").mkdir(parents=True)
    (root / "ref" / "index.html").write_text("x")
    (root / "_static").mkdir()
    (root / "_static" / "jquery.js").symlink_to("../../../javascript/jquery.js")  # dangling, as in Debian
    (tmp_path / "secret.html").write_text("no")
    (root / "_static" / "escape.html").symlink_to(tmp_path / "secret.html")
    root = root.resolve()
    assert resolve(root, "/ref/") == ("file", root / "ref" / "index.html")
    assert resolve(root, "/ref") == ("redirect", None)
    for path in ("/_static/jquery.js", "/_static/escape.html", "/../secret.html", "/%2e%2e/secret.html",
                 "/nope.html", "/a%00b"):
        assert resolve(root, path) == ("missing", None), path


# --- the whole path: serve, crawl, query, score --------------------------------------------

IDENTIFIERS = [
    ("os.path.join", "in module os.path"), ("read_text", "pathlib.Path method"),
    ("current_database", "PostgreSQL function"), ("shutil.copytree", "in module shutil"),
    ("write_bytes", "pathlib.Path method"), ("json.dumps", "in module json"),
    ("get_object_or_404", "in module django.shortcuts"), ("select_related", "QuerySet method"),
    ("asyncio.gather", "in module asyncio"), ("functools.lru_cache", "in module functools"),
    ("collections.Counter", "class in collections"), ("subprocess.run", "in module subprocess"),
    ("re.compile", "in module re"), ("datetime.timedelta", "class in datetime"),
    ("urllib.parse.urljoin", "in module urllib.parse"), ("logging.getLogger", "in module logging"),
    ("sqlite3.connect", "in module sqlite3"), ("zipfile.ZipFile", "class in zipfile"),
    ("PL/Perl", None), ("--verbosity", None), ("--settings", None), ("bulk_create", "QuerySet method"),
    ("itertools.chain", "in module itertools"), ("html.escape", "in module html"),
]
PROSE = ("the of a to and in that is for it as with be on this are by an from which can or you when "
         "value result return object call function page example module configure request data file "
         "system list default option argument process string number record table field user list "
         "server client message name type time method class instance attribute error handle").split()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(PROSE) for _ in range(n))


def build_site(root) -> list[str]:
    """A small Sphinx-like documentation site: index, a page per identifier (title,
    headings, prose; each also mentioned on two other pages), and genindex.html."""
    rng = random.Random(7)
    pages = [f"api/page{i}.html" for i in range(len(IDENTIFIERS))]
    (root / "api").mkdir(parents=True)
    for i, (name, _) in enumerate(IDENTIFIERS):
        see_also = [IDENTIFIERS[(i + step) % len(IDENTIFIERS)][0] for step in (1, 2)]
        body = "".join(f"<p>{_words(rng, 60)}</p>" for _ in range(3))
        (root / pages[i]).write_text(
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{name} — Tinydocs</title></head><body>"
            f"<div class='body'><h1>{name}</h1><p>{_words(rng, 20)} <code>{name}</code> {_words(rng, 20)}</p>"
            f"<h2>Using {name}</h2>{body}<p>Call <code>{name}</code> {_words(rng, 15)}.</p>"
            f"<h2>Notes</h2><p>{_words(rng, 40)} See also {see_also[0]} and {see_also[1]}.</p></div>"
            f"<div class='related'><a href='../index.html'>Tinydocs</a> <a href='../genindex.html'>Index</a></div>"
            f"</body></html>")
    links = "".join(f"<li><a href='{p}'>{IDENTIFIERS[i][0]}</a></li>" for i, p in enumerate(pages))
    (root / "index.html").write_text(
        f"<!DOCTYPE html><html><head><title>Tinydocs documentation</title></head><body><h1>Tinydocs</h1>"
        f"<p>{_words(rng, 50)}</p><ul>{links}</ul><a href='genindex.html'>Index</a></body></html>")
    entries = []
    for i, (name, qualifier) in enumerate(IDENTIFIERS):
        anchor = f"{pages[i]}#{name.strip('-').replace('/', '-')}"
        if name.startswith("--"):
            entries.append(f"<li>{name}<ul><li><a href='{anchor}'>manage command line option</a></li>"
                           f"<li><a href='{anchor}-2'>check command line option</a></li></ul></li>")
        else:
            text = f"{name}() ({qualifier})" if qualifier else name
            entries.append(f"<li><a href='{anchor}'>{text}</a></li>")
    entries.append(f"<li><a href='{pages[0]}#x'>ambiguous (one)</a><ul><li><a href='{pages[1]}#y'>(two)</a></li>"
                   "</ul></li>")
    (root / "genindex.html").write_text(
        "<!DOCTYPE html><html><head><title>Index — Tinydocs</title></head><body><h1 id='index'>Index</h1>"
        "<table style='width: 100%' class='indextable genindextable'><tr><td><ul>"
        + "\n".join(entries) + "</ul></td></tr></table></body></html>")
    return pages


@pytest.fixture(scope="module")
def evaluated_site(django_db_setup, django_db_blocker, tmp_path_factory, module_test_settings):
    """The small site crawled into the test database (committed: the crawler's threads have
    their own connections). Yields its known-item queries as metrics.Query objects."""
    root = tmp_path_factory.mktemp("searcheval") / "html"
    pages = build_site(root)
    with django_db_blocker.unblock():
        call_command("flush", "--no-input")
        get_search_backend().clear()
        with run_sites({"tinydocs": root}) as bases:
            out = StringIO()
            call_command("crawl", bases["tinydocs"], "--scope", "host", "--no-progress", "--json", "--threads", "4",
                         stdout=out)
        summary = json.loads(out.getvalue())
        items, built = queries.build({"tinydocs": genindex.read_index(root)}, limit=100,
                                     exists=lambda site, page: (root / page).is_file())
        yield [Query(i.query, bases[i.site] + i.target, i.kind) for i in items], built, summary, pages
        call_command("flush", "--no-input")
        get_search_backend().clear()


@pytest.mark.crawl
@pytest.mark.django_db
def test_the_evaluation_scores_every_query_and_a_broken_ranking_scores_lower(evaluated_site):
    known, built, summary, pages = evaluated_site
    assert summary["documents"]["indexed"] == len(pages) + 2  # the pages, index.html and genindex.html
    assert len(known) == len(IDENTIFIERS) and built["tinydocs"]["dropped"] == {"ambiguous": 1,
                                                                             "ambiguous_across_sites": 0}
    assert {q.kind for q in known} == {"dotted", "snake_case", "option", "words"}
    real = evaluate(known, search_urls)
    broken = evaluate(known, lambda text: list(reversed(search_urls(text))))
    for metrics in (real, broken):
        assert metrics.queries == len(known)
        assert sum(v["queries"] for v in metrics.mrr_by_kind.values()) == len(known)
        assert metrics.latency_ms_median is not None and metrics.latency_ms_p95 >= metrics.latency_ms_median
    assert real.mrr > 0
    assert broken.mrr < real.mrr
