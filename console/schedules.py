"""The periodic tasks beat runs (django-celery-beat's DatabaseScheduler), created after
every migrate if missing. Once created they belong to the admin: intervals edited or tasks
disabled there are never overwritten here."""

from django.conf import settings

SCHEDULES = [
    # (name in the admin, task, every … seconds)
    ("crawlerweb: sample metrics", "console.sample_metrics", "CRAWLER_METRICS_SAMPLE_SECONDS"),
    ("crawlerweb: sweep expired leases", "frontier.sweep_expired_leases", "CRAWLER_LEASE_SWEEP_SECONDS"),
    ("crawlerweb: release due revisits", "frontier.release_due_urls", "CRAWLER_RECRAWL_RELEASE_SECONDS"),
    ("crawlerweb: plan recrawl budget", "frontier.plan_recrawl", "CRAWLER_RECRAWL_PLAN_SECONDS"),
]


def ensure_periodic_tasks(**kwargs) -> list[str]:
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    created = []
    for name, task, setting in SCHEDULES:
        if PeriodicTask.objects.filter(name=name).exists():
            continue
        every = max(1, int(getattr(settings, setting)))
        interval, _ = IntervalSchedule.objects.get_or_create(every=every, period=IntervalSchedule.SECONDS)
        PeriodicTask.objects.create(name=name, task=task, interval=interval, queue="maintenance",
                                    description=f"every {setting} seconds by default")
        created.append(name)
    return created
