"""The whole stack from the Procfile, run by honcho as `make stack` runs it: gunicorn (API,
dashboard, static files), a dispatcher, a Celery worker, beat and Flower with basic auth.
Seeded through the REST API, it crawls the sample web completely and politely, beat runs
its periodic tasks, Flower shows the worker and its fetch tasks named after their hosts,
the dashboard's liveness panel shows every process, a worker killed with SIGKILL is
started again while the web goes on answering, and SIGTERM stops it all."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
import requests
from django.conf import settings
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from console.keys import create_key
from console.models import MetricSample
from frontier import service
from frontier.models import Host
from indexer.backends import get_search_backend

from ..crawl_helpers import assert_complete_and_polite, audit, child_env, free_port, sample_web

pytestmark = [pytest.mark.crawl, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

FLOWER_LOGIN = ("operator", "flower-test-pass")
STARTUP_TIMEOUT = 60
CRAWL_TIMEOUT = 180


def wait_for(check, timeout: float, what: str, proc: subprocess.Popen):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the stack exited ({proc.returncode}) while waiting for {what}")
        try:
            result = check()
            if result:
                return result
        except requests.RequestException:
            pass
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def stack(tmp_path):
    get_search_backend().clear()
    # Beat samples metrics every second here, so this short crawl sees it run.
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.filter(task__in=["console.sample_metrics", "frontier.sweep_expired_leases"]).update(
        interval=every_second, total_run_count=0, last_run_at=None)
    # A lease whose worker died, on a host with nothing queued: only the sweep clears it.
    Host.objects.create(origin="http://orphan.test", lease_owner="dead-worker",
                        leased_until=timezone.now() - timedelta(minutes=5))
    web_port, flower_port = free_port(), free_port()
    env = child_env(WEB_BIND=f"127.0.0.1:{web_port}", FLOWER_PORT=flower_port,
                    FLOWER_BASIC_AUTH=":".join(FLOWER_LOGIN), LOG_LEVEL="WARNING",
                    # Heartbeats every second, stale after 6 (the keeper ticks every 2 s).
                    CRAWLER_HEARTBEAT_SECONDS=1, CRAWLER_HEARTBEAT_STALE_SECONDS=6,
                    PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    redis.Redis.from_url(env["CELERY_BROKER_URL"]).flushdb()
    log = open(tmp_path / "stack.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "honcho", "start", "-f", "Procfile"], cwd=settings.BASE_DIR,
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.web = f"http://127.0.0.1:{web_port}"
    proc.flower = f"http://127.0.0.1:{flower_port}"
    proc.log = tmp_path / "stack.log"
    proc.processes = set()
    try:
        yield proc
    finally:
        proc.processes |= descendants(proc.pid)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in alive(proc.processes):
            os.kill(pid, signal.SIGKILL)
        log.close()
        get_search_backend().clear()


def descendants(pid: int) -> set[int]:
    """Every process under pid (honcho starts each in a session of its own)."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def celery_worker(stack) -> tuple[int, int] | None:
    """(pid, its respawn.sh's pid) of the Celery worker's main process, or None."""
    for pid in descendants(stack.pid):
        args = command_line(pid)
        if "worker" in args and any(a.endswith("celery") for a in args[:2]):
            parent = parent_of(pid)
            if any(a.endswith("respawn.sh") for a in command_line(parent)):
                return pid, parent
    return None


def alive(pids: set[int]) -> set[int]:
    living = set()
    for pid in pids:
        try:
            os.kill(pid, 0)
            living.add(pid)
        except ProcessLookupError:
            pass
    return living


def test_the_procfile_stack_crawls_reports_and_stops_cleanly(tmp_path, stack):
    key = create_key("stack test")[1]
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {key}"
    flower_auth = requests.auth.HTTPBasicAuth(*FLOWER_LOGIN)
    try:
        wait_for(lambda: api.get(f"{stack.web}/metrics", timeout=5).ok, STARTUP_TIMEOUT, "the web process", stack)
        wait_for(lambda: requests.get(f"{stack.flower}/api/workers?refresh=1", auth=flower_auth, timeout=5).json(),
                 STARTUP_TIMEOUT, "Flower to see the worker", stack)

        with sample_web(tmp_path) as web:
            answer = api.post(f"{stack.web}/seed/urls", json={"urls": web.seeds, "scope": "web"}, timeout=10)
            assert answer.status_code == 200 and answer.json()["accepted"] == len(web.seeds)
            wait_for(lambda: not service.has_pending_work(), CRAWL_TIMEOUT, "the crawl to finish", stack)
        assert_complete_and_polite(web, audit(web))

        # Figures may be a sample up to CRAWLER_METRICS_MAX_AGE old: wait for one after the crawl.
        figures = wait_for(lambda: (lambda f: f if f["urls"]["by_state"]["queued"] == 0 else None)(
            api.get(f"{stack.web}/metrics?format=json", timeout=10).json()), 30, "figures after the crawl", stack)
        assert figures["urls"]["fetched"] > 0
        assert figures["fetch_queues"] is not None  # the web process sees the broker
        prometheus = api.get(f"{stack.web}/metrics", headers={"Accept": "text/plain"}, timeout=10)
        assert b"crawlerweb_urls{state=\"fetched\"}" in prometheus.content

        # Beat ran both periodic tasks through the worker: samples every second (requests
        # alone take one per CRAWLER_METRICS_MAX_AGE), and the orphaned lease is swept.
        wait_for(lambda: MetricSample.objects.filter(taken_at__gte=timezone.now() - timedelta(seconds=10)).count() >= 4,
                 30, "beat's metrics samples", stack)
        wait_for(lambda: Host.objects.filter(origin="http://orphan.test", lease_owner="").exists(),
                 30, "beat's lease sweep", stack)

        # Flower: closed without the password, and with it lists the worker and its fetch tasks.
        assert requests.get(f"{stack.flower}/api/workers", timeout=5).status_code == 401
        workers = requests.get(f"{stack.flower}/api/workers?refresh=1", auth=flower_auth, timeout=10).json()
        assert len(workers) == 1
        tasks = requests.get(f"{stack.flower}/api/tasks", auth=flower_auth, timeout=10).json()
        sessions = [t for t in tasks.values() if t["name"].startswith("fetch.host_session")]
        assert sessions and {t["state"] for t in sessions} == {"SUCCESS"}
        assert all(t["worker"] == next(iter(workers)) for t in sessions)
        # Named after their hosts (Celery's shadow name), every host of the sample web.
        assert {t["name"] for t in sessions} == {f"fetch.host_session[http://{host}]" for host in web.hosts}

        # gunicorn serves the dashboard's static files and sends strangers to the login page.
        assert requests.get(f"{stack.web}/static/vendor/chartjs/chart.umd.min.js", timeout=5).status_code == 200
        dashboard = requests.get(f"{stack.web}/dashboard/", allow_redirects=False, timeout=5)
        assert dashboard.status_code == 302 and "/admin/login/" in dashboard.headers["Location"]
        assert requests.get(f"{stack.web}/favicon.ico", timeout=5).status_code == 200

        # The liveness panel: the worker's engine and the dispatcher report, beat has run.
        live = api.get(f"{stack.web}/dashboard/data", timeout=10).json()["liveness"]
        assert live["workers_online"] >= 1 and live["dispatchers_online"] == 1, live
        (dispatcher,) = [p for p in live["processes"] if p["kind"] == "dispatcher"]
        assert dispatcher["leases"] >= len(web.hosts) and dispatcher["last_lease_at"]
        assert live["beat"]["last_run_at"] and not live["beat"]["late"]
        assert live["crawl"]["state"] == "idle"  # crawled it all

        # A worker killed outright is started again; the web never stops answering.
        killed, wrapper = celery_worker(stack)
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while (restarted := celery_worker(stack)) is None or restarted[0] == killed:
            assert api.get(f"{stack.web}/dashboard/data", timeout=10).status_code == 200  # the dashboard goes on
            assert stack.poll() is None and time.monotonic() < deadline, "the worker was not started again"
            time.sleep(0.3)
        assert restarted[1] == wrapper  # by the same respawn.sh: honcho saw nothing
        wait_for(lambda: any(w.get("stats", {}).get("pid") == restarted[0] for w in requests.get(
            f"{stack.flower}/api/workers?refresh=1", auth=flower_auth, timeout=10).json().values()),
            STARTUP_TIMEOUT, "Flower to see the new worker", stack)
        # The dead worker's engines stopped writing their heartbeats: stale, not online.
        wait_for(lambda: any(p["state"] == "stale" and p["kind"] == "worker" for p in api.get(
            f"{stack.web}/dashboard/data", timeout=10).json()["liveness"]["processes"]), 30,
            "the killed worker's heartbeat to go stale", stack)
        assert api.get(f"{stack.web}/dashboard/data", timeout=10).status_code == 200
        assert "respawn: celery was killed by signal 9" in stack.log.read_text(errors="replace")
    except AssertionError:
        print(stack.log.read_text(errors="replace")[-6000:])
        raise

    # SIGTERM (what Ctrl-C or systemd sends) stops every process of the stack.
    stack.processes |= descendants(stack.pid)
    assert len(stack.processes) >= 10  # five respawn.sh, five programs (and gunicorn's workers)
    stack.send_signal(signal.SIGTERM)
    stack.wait(timeout=40)
    deadline = time.monotonic() + 10
    while alive(stack.processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(stack.processes), "a process of the stack outlived honcho"
    log = stack.log.read_text(errors="replace")
    for name in ("web", "dispatcher", "worker", "beat", "flower"):
        assert f"{name}.1 started" in log and f"{name}.1 stopped" in log, name
