"""Schema changes against the rows and the workers of the previous release (STYLE.md 15):
frontier/0009 keys URLs by url_key, and the previous release keeps inserting by url_hash
while the upgrade rolls out."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from frontier.models import Url
from frontier.normalize import url_hash, url_key

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("frontier", "0008_wait_reason_db_default")


@pytest.fixture
def previous_release():
    """The frontier schema of the release before url_key; the current one again after."""
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    yield executor.loader.project_state([BEFORE]).apps
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def migrate_to_latest():
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_the_migration_gives_every_url_its_key(previous_release):
    OldHost, OldUrl = previous_release.get_model("frontier", "Host"), previous_release.get_model("frontier", "Url")
    host = OldHost.objects.create(origin="http://old.test")
    urls = [f"http://old.test/{n}" for n in range(5)]
    OldUrl.objects.bulk_create([OldUrl(url=u, url_hash=url_hash(u), host=host) for u in urls])
    migrate_to_latest()
    assert dict(Url.objects.values_list("url", "url_key")) == {u: url_key(u) for u in urls}


def test_the_referring_hosts_the_rows_counted_become_each_hosts_sketches():
    """frontier/0023: a host's standing moved from a row per referring host to two sketches
    on the host row; what the rows counted is kept."""
    from frontier.importance import referrer_key, referrer_sketch, referring_hosts
    from frontier.models import Host

    executor = MigrationExecutor(connection)
    executor.migrate([("frontier", "0022_recrawl_prior")])
    apps = executor.loader.project_state([("frontier", "0022_recrawl_prior")]).apps
    OldHost, OldReferrer = apps.get_model("frontier", "Host"), apps.get_model("frontier", "HostReferrer")
    linked = OldHost.objects.create(origin="http://linked.test")
    OldHost.objects.create(origin="http://a.test")  # linked from nowhere
    referrers = [f"http://r{n}.test" for n in range(40)]
    OldReferrer.objects.bulk_create([OldReferrer(host=linked, referrer_key=referrer_key(r)) for r in referrers])
    migrate_to_latest()
    host = Host.objects.get(origin="http://linked.test")
    assert (host.referrer_bits, host.referrer_ranks) == referrer_sketch(referrers)
    assert abs(referring_hosts(host.referrer_bits, host.referrer_ranks) - 40) <= 6
    assert Host.objects.get(origin="http://a.test").referring_hosts == 0


@pytest.mark.postgres
def test_workers_of_the_previous_release_keep_inserting_during_the_upgrade(previous_release):
    """Their rows get url_key from the trigger, so neither release inserts a URL twice."""
    from frontier.admission import Candidate, add_urls

    OldHost, OldUrl = previous_release.get_model("frontier", "Host"), previous_release.get_model("frontier", "Url")
    host_id = OldHost.objects.create(origin="http://old.test").id
    migrate_to_latest()
    # The previous release's insert, as its ORM sends it: url_hash, no url_key.
    OldUrl.objects.bulk_create([OldUrl(url="http://old.test/a", url_hash=url_hash("http://old.test/a"),
                                       host_id=host_id)], ignore_conflicts=True)
    assert Url.objects.get(url="http://old.test/a").url_key == url_key("http://old.test/a")
    # This release inserts another URL; the previous one, not seeing it by url_hash, tries too.
    assert add_urls([Candidate("http://old.test/b", depth=1)]).admitted == 1
    OldUrl.objects.bulk_create([OldUrl(url="http://old.test/b", url_hash=url_hash("http://old.test/b"),
                                       host_id=host_id)], ignore_conflicts=True)
    assert add_urls([Candidate("http://old.test/a", depth=1)]).admitted == 0
    assert sorted(Url.objects.values_list("url", flat=True)) == ["http://old.test/a", "http://old.test/b"]


# --- rolling upgrades: every NOT NULL column added after a table's creation has a default ---

from django.db.migrations import operations as migration_ops  # noqa: E402
from django.db.migrations.loader import MigrationLoader  # noqa: E402
from django.db.models import NOT_PROVIDED  # noqa: E402

OUR_APPS = ("frontier", "indexer", "fetch", "console", "crawl")
# Added NOT NULL without a database default, each for a reason: url_key gets its value from
# a trigger for the previous release's inserts (frontier/0009, PostgreSQL: the test below).
EXCEPTIONS = {("frontier", "url", "url_key")}


def added_not_null_without_default():
    """(app, model, field) of every column a migration adds (or makes NOT NULL) after its
    table's creation whose final form is NOT NULL with no database default."""
    from django.apps import apps

    loader = MigrationLoader(None, ignore_no_migrations=True)
    found = set()
    for (app, name), migration in sorted(loader.disk_migrations.items()):
        if app not in OUR_APPS:
            continue
        before = loader.project_state((app, name), at_end=False)
        for op in migration.operations:
            if isinstance(op, migration_ops.AlterField):
                old = before.models.get((app, op.model_name))
                if old is None or op.name not in old.fields or not old.fields[op.name].null or op.field.null:
                    continue  # not a NOT NULL made from a nullable column (or added by this migration)
            elif not isinstance(op, migration_ops.AddField):
                continue
            try:
                field = apps.get_model(app, op.model_name)._meta.get_field(op.name)
            except LookupError:
                continue  # dropped since
            if not field.null and field.db_default is NOT_PROVIDED and (app, op.model_name, op.name) not in EXCEPTIONS:
                found.add((app, op.model_name, op.name))
    return found


def test_every_not_null_column_added_since_a_tables_creation_has_a_database_default():
    """STYLE.md 15: the previous release's workers insert rows that do not name it."""
    assert added_not_null_without_default() == set()


def test_the_rule_catches_a_new_migration_that_breaks_it(monkeypatch):
    """A migration adding a NOT NULL column with only a Python default is reported."""
    from django.db import migrations, models

    original = MigrationLoader.load_disk

    def with_a_bad_migration(self):
        original(self)
        bad = migrations.Migration("9999_bad", "frontier")
        bad.dependencies = [max(key for key in self.disk_migrations if key[0] == "frontier")]
        bad.operations = [migrations.AddField("host", "failures", models.SmallIntegerField(default=0))]
        self.disk_migrations[("frontier", "9999_bad")] = bad

    monkeypatch.setattr(MigrationLoader, "load_disk", with_a_bad_migration)
    from django.apps import apps
    monkeypatch.setattr(apps.get_model("frontier", "host")._meta.get_field("failures"), "db_default", NOT_PROVIDED)
    assert added_not_null_without_default() == {("frontier", "host", "failures")}


@pytest.mark.postgres
def test_rows_written_as_each_table_was_first_created_still_insert(django_db_blocker):
    """The raw-INSERT check per model: an INSERT naming only the columns its table had when
    it was created (the oldest release that wrote it) succeeds on today's schema."""
    import itertools

    from django.apps import apps

    loader = MigrationLoader(None, ignore_no_migrations=True)
    counter = itertools.count(1)
    created = {}
    for (app, name), migration in sorted(loader.disk_migrations.items()):
        for op in _operations(migration.operations):
            if app in OUR_APPS and isinstance(op, migration_ops.CreateModel):
                state = loader.project_state((app, name)).models[(app, op.name_lower)]
                created[(app, op.name_lower)] = state
    inserted = []
    for (app, model_name), state in sorted(created.items()):
        try:
            model = apps.get_model(app, model_name)
        except LookupError:
            continue
        columns, values = [], []
        # By column, as the old release's INSERT names them (a field renamed in Python only,
        # Url.priority -> score, keeps its column).
        current = {f.column: f for f in model._meta.concrete_fields}
        for field_name, first in state.fields.items():
            field = current.get(first.db_column or (f"{field_name}_id" if first.many_to_one or first.one_to_one else field_name))
            if field is None or (field.primary_key and field.get_internal_type() in ("AutoField", "BigAutoField")):
                continue
            columns.append(field.column)
            values.append(_value_for(field, counter))
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
                           f"VALUES ({', '.join(['%s'] * len(values))})", values)
        inserted.append(model_name)
    assert {"host", "url", "document", "processheartbeat"} <= set(inserted)


def _operations(operations):
    """A migration's operations, with what a SeparateDatabaseAndState holds (a model that
    moved between apps is created there, in state only)."""
    for op in operations:
        if isinstance(op, migration_ops.SeparateDatabaseAndState):
            yield from _operations(op.state_operations)
        else:
            yield op


def _value_for(field, counter):
    """A value as the first release would have written it (its Python default, a unique
    dummy otherwise; a parent row made for a foreign key)."""
    import hashlib

    from django.utils import timezone

    n = next(counter)
    if field.is_relation:
        return _parent(field.related_model, counter)
    if field.name == "url_hash":  # the key the trigger derives url_key from (frontier/0009)
        return hashlib.blake2b(f"http://old{n}.test/".encode(), digest_size=16).hexdigest()
    if field.has_default():
        return field.get_db_prep_save(field.get_default(), connection)
    kind = field.get_internal_type()
    if kind == "JSONField":
        return field.get_db_prep_save({}, connection)
    if kind in ("CharField", "TextField", "SlugField"):
        return f"v{n}"[: field.max_length or None]
    if kind == "GenericIPAddressField":
        return f"127.0.{n // 250}.{n % 250 + 1}"
    if kind == "DateTimeField":
        return timezone.now()
    if kind == "BooleanField":
        return False
    if kind == "FloatField":
        return 1.0
    return n


def _parent(model, counter):
    fields = {}
    for field in model._meta.concrete_fields:
        if field.auto_created or field.null or field.has_default() or field.db_default is not NOT_PROVIDED:
            continue
        fields[field.attname] = _value_for(field, counter)
        if field.name == "url_key":
            fields[field.attname] = next(counter)
    if model._meta.model_name == "url":
        fields.setdefault("url", f"http://parent{next(counter)}.test/")
    return model.objects.create(**fields).pk


def test_the_crawl_log_and_the_heartbeats_move_to_the_crawl_app_with_their_rows():
    """crawl/0001: the crawl log (fetch's) and the heartbeats (console's) became the crawl
    app's models without a table being copied: rows written before are read after, and the
    admin's permissions on them follow them."""
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.utils import timezone

    from crawl.models import CrawlLogEntry, ProcessHeartbeat

    before = [("fetch", "0001_initial"), ("console", "0004_beat_leader")]
    executor = MigrationExecutor(connection)
    executor.migrate([("crawl", None)])  # what main was before the crawl app
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    apps.get_model("fetch", "CrawlLogEntry").objects.create(
        at=timezone.now(), kind="page", url="http://old.test/", host_id=1, origin="http://old.test", outcome="ok")
    apps.get_model("console", "ProcessHeartbeat").objects.create(kind="worker", name="w1", hostname="h", pid=7)
    ContentType.objects.filter(app_label="crawl").delete()
    logs, _ = ContentType.objects.get_or_create(app_label="fetch", model="crawllogentry")
    Permission.objects.get_or_create(content_type=logs, codename="view_crawllogentry",
                                     defaults={"name": "Can view crawl log entry"})
    ContentType.objects.clear_cache()
    migrate_to_latest()
    assert list(CrawlLogEntry.objects.values_list("url", "outcome")) == [("http://old.test/", "ok")]
    assert list(ProcessHeartbeat.objects.values_list("name", "pid")) == [("w1", 7)]
    ContentType.objects.clear_cache()
    assert Permission.objects.get(codename="view_crawllogentry").content_type.app_label == "crawl"
