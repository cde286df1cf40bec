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
