# crawlerweb — the two commands a newcomer needs:
#   make demo   set up, crawl the bundled sample web (embedded: SQLite, no broker), search it
#   make test   set up (incl. Chromium for the browser test and pywb for replay), start
#               PostgreSQL/Redis if needed, run the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# pywb, for `manage.py replay`, in a virtualenv of its own (requirements-replay.txt says why)
REPLAY_VENV := .venv-replay
PG_URL ?= postgres://postgres@127.0.0.1:5432/crawlerweb
DEMO_PORT ?= 8300
DEMO_DB := var/demo.sqlite3
export CRAWLER_ALLOWED_NETWORKS ?= 127.0.0.0/8

.PHONY: setup setup-browser replay-setup replay demo demo-distributed stack test test-postgres test-sqlite test-postgres-crawl test-postgres-rest test-sqlite-crawl test-sqlite-rest services bench-services sampleweb clean bench bench-quick bench-frontier bench-metrics bench-freshness bench-search bench-harvest bench-gemini bench-export bench-encodings bench-scale

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

# Chart.js for the dashboard, pinned in package-lock.json (needs npm; the crawl does not).
node_modules/.installed: package.json package-lock.json
	@if command -v npm >/dev/null; then npm ci --no-audit --no-fund --loglevel=error && touch $@; \
	 else echo "npm not found: the dashboard will have no charts (install nodejs/npm)"; fi

setup: $(VENV)/.installed node_modules/.installed

$(REPLAY_VENV)/.installed: requirements-replay.txt
	$(PYTHON) -m venv $(REPLAY_VENV)
	$(REPLAY_VENV)/bin/python -m pip install -q --upgrade pip
	$(REPLAY_VENV)/bin/python -m pip install -q -r requirements-replay.txt
	touch $@

replay-setup: $(REPLAY_VENV)/.installed

# Replay the WARC archive in a browser (pywb on 127.0.0.1:8090; docs/archive.md: "Replay the archive").
replay: setup replay-setup
	$(PY) manage.py replay

# Debian's chromium, for the dashboard's browser test.
setup-browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

demo: setup
	@mkdir -p var && rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm var/demo-requests.log
	DATABASE_URL=sqlite:///$(CURDIR)/$(DEMO_DB) $(PY) manage.py migrate -v0
	DATABASE_URL=sqlite:///$(CURDIR)/$(DEMO_DB) CRAWLER_DEFAULT_DELAY=0.1 \
	  $(PY) -m bench.demo --port $(DEMO_PORT) --log var/demo-requests.log

# The same crawl on PostgreSQL + Redis with 2 Celery workers and 2 dispatchers, with figures.
demo-distributed: setup services
	-psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE crawlerweb_demo" 2>/dev/null
	DATABASE_URL=postgres://postgres@127.0.0.1:5432/crawlerweb_demo $(PY) manage.py migrate -v0
	DATABASE_URL=postgres://postgres@127.0.0.1:5432/crawlerweb_demo CELERY_BROKER_URL=redis://127.0.0.1:6379/13 \
	  CRAWLER_DEFAULT_DELAY=0.1 $(PY) -m bench.distributed_demo --port $(DEMO_PORT)

services:
	./scripts/services.sh

# The whole stack on this machine (web/API/dashboard on :8000, dispatcher, worker, beat,
# Flower on :5555), on PostgreSQL + Redis; Ctrl-C stops it. docs/operations.md: "The whole stack on one machine".
STACK_DB ?= postgres://postgres@127.0.0.1:5432/crawlerweb_stack
STACK_BROKER ?= redis://127.0.0.1:6379/11
# Empty: the SSRF guard is on. `make stack STACK_ALLOWED_NETWORKS=127.0.0.0/8` crawls the sample web.
STACK_ALLOWED_NETWORKS ?=
stack: setup services
	-psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE crawlerweb_stack" 2>/dev/null
	DATABASE_URL=$${DATABASE_URL:-$(STACK_DB)} CELERY_BROKER_URL=$${CELERY_BROKER_URL:-$(STACK_BROKER)} \
	  CRAWLER_ALLOWED_NETWORKS=$(STACK_ALLOWED_NETWORKS) ./scripts/stack.sh

# Benchmarks (docs/benchmarks.md), with default settings and Scrapy side by side (installed
# into var/scrapy-venv on first use). `make bench` takes about 55 minutes; bench-quick about 6.
BENCH_DB := postgres://postgres@127.0.0.1:5432/crawlerweb_bench
# The -nodelay modes run with CRAWLER_DEFAULT_DELAY=0 as Scrapy does (work per page, like for
# like); the others with the defaults. `services --statements` loads pg_stat_statements for
# the PostgreSQL statement groups (a restart of PostgreSQL, once).
bench: setup bench-services
	$(PY) -m bench.run --size standard --modes embedded,embedded-nodelay,distributed:1,distributed:1-nodelay,scrapy,ceiling
	$(PY) -m bench.run --size polite --modes embedded,distributed:1,scrapy
	$(PY) -m bench.run --size smallsites --modes embedded,distributed:1,scrapy
	$(PY) -m bench.run --size smallsites-default --modes embedded,distributed:1

bench-quick: setup bench-services
	$(PY) -m bench.run --size quick --modes embedded,embedded-nodelay,distributed:1,distributed:1-nodelay,scrapy,ceiling

bench-services:
	./scripts/services.sh --statements

# Recrawl policies at one budget on a web whose pages change at known rates (about 17 minutes).
bench-freshness: setup
	$(PY) -m bench.freshness

# Geminispace beside the http sample web of the same size: pages/s, CPU per page, sockets (~3 minutes).
bench-gemini: setup
	$(PY) -m bench.gemini_bench

# Which pages first (issue 29): harvest of important pages, sitemaps, a mirror, a trap (~3 minutes).
bench-harvest: setup
	$(PY) -m bench.harvest

# Pages in legacy encodings (issue 53): the legacy web crawled with `manage.py crawl`'s
# defaults, stored text right per script and per declaration, and the decoding cost per
# page (~5 minutes; docs/encodings.md).
bench-encodings: setup
	$(PY) -m bench.encodings

# Known-item search quality on five Debian documentation packages (queries from their Sphinx
# indexes): ours on SQLite and PostgreSQL beside tantivy and bm25s (installed into
# var/searcheval-venv on first use). About 6 minutes the first time; a finished crawl is
# reused (SEARCHEVAL_ARGS=--recrawl to redo it). docs: bench/searcheval/__init__.py.
SEARCHEVAL_ARGS ?=
bench-search: setup services
	$(PY) -m bench.searcheval $(SEARCHEVAL_ARGS)

# The crawl as it grows (bench/scale.py): 10k and 100k pages embedded and distributed, and the
# 10k web beside 10M waiting URLs, one table (~1 h). SCALE_ARGS="--sizes 10k,100k,1m" adds
# a million pages (hours more on 2 cores); SCALE_ARGS="--sizes 10k --waiting 0" is a quick look.
SCALE_ARGS ?=
bench-scale: setup bench-services
	$(PY) -m bench.scale $(SCALE_ARGS)

bench-frontier: setup services
	-psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE crawlerweb_bench" 2>/dev/null
	DATABASE_URL=$(BENCH_DB) $(PY) manage.py migrate -v0
	DATABASE_URL=$(BENCH_DB) $(PY) -m bench.frontier_scale

bench-metrics: setup services
	-psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE crawlerweb_bench" 2>/dev/null
	DATABASE_URL=$(BENCH_DB) $(PY) manage.py migrate -v0
	DATABASE_URL=$(BENCH_DB) CELERY_BROKER_URL=redis://127.0.0.1:6379/12 $(PY) -m bench.metrics_scale

# What `manage.py export` costs at 1M documents: JSON lines and Parquet, rows/s and peak memory,
# and --outlinks on 10,000 archived pages (docs/benchmarks.md "Export"; about 15 minutes the
# first time, mostly filling its database, which later runs keep). EXPORT_ARGS=--runs 3 …
EXPORT_DB := postgres://postgres@127.0.0.1:5432/crawlerweb_exportbench
EXPORT_ARGS ?=
bench-export: setup services
	-psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE crawlerweb_exportbench" 2>/dev/null
	DATABASE_URL=$(EXPORT_DB) $(PY) manage.py migrate -v0
	DATABASE_URL=$(EXPORT_DB) $(PY) -m bench.export_cost $(EXPORT_ARGS)

# The two databases' runs side by side, each in two halves (the tests that crawl a loopback
# web — tests/crawl and tests/bench —, the rest): the suite mostly waits (servers' latency,
# delays, workers starting), so four runs on two cores take about half the wall time of
# two. The halves are about even (on SQLite the benches' tests were the long pole's third).
# Each half has its own test database and Redis database (their tests empty their broker);
# -O keeps each run's output together.
test: setup setup-browser replay-setup services
	$(MAKE) -j4 -O test-postgres-crawl test-postgres-rest test-sqlite-crawl test-sqlite-rest

PG_URL_REST ?= postgres://postgres@127.0.0.1:5432/crawlerweb_rest
CRAWL_TESTS := tests/crawl tests/bench
NOT_CRAWL_TESTS := $(foreach dir,$(CRAWL_TESTS),--ignore=$(dir))

# One database's whole suite in one run (the test target splits each in two).
test-postgres:
	DATABASE_URL=$(PG_URL) $(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS)

test-postgres-crawl:
	DATABASE_URL=$(PG_URL) $(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS) $(CRAWL_TESTS)

test-postgres-rest:
	DATABASE_URL=$(PG_URL_REST) CRAWLER_TEST_BROKER_URL=redis://127.0.0.1:6379/10 \
		$(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS) $(NOT_CRAWL_TESTS) tests

# The embedded backend: the same suite on SQLite (PostgreSQL-only tests skip themselves).
# Its own Redis database: the runs go side by side and their tests empty their broker.
test-sqlite:
	@mkdir -p var
	DATABASE_URL=sqlite:///$(CURDIR)/var/unused.sqlite3 CRAWLER_TEST_BROKER_URL=redis://127.0.0.1:6379/15 \
		$(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS)

test-sqlite-crawl:
	@mkdir -p var
	DATABASE_URL=sqlite:///$(CURDIR)/var/unused.sqlite3 CRAWLER_TEST_BROKER_URL=redis://127.0.0.1:6379/15 \
		$(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS) $(CRAWL_TESTS)

test-sqlite-rest:
	@mkdir -p var
	DATABASE_URL=sqlite:///$(CURDIR)/var/unused-rest.sqlite3 CRAWLER_TEST_BROKER_URL=redis://127.0.0.1:6379/9 \
		$(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS) $(NOT_CRAWL_TESTS) tests

sampleweb: setup
	$(PY) -m webs.sampleweb serve --port $(DEMO_PORT) --log var/sampleweb.log

clean:
	rm -rf var .pytest_cache
