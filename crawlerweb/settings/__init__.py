"""crawlerweb settings: everything comes from the environment, read here and only here, by
concern: Django's own (base.py), Celery's (celery.py), the crawler's (crawler.py); the
typed readers in env.py. Every crawler limit is a named `CRAWLER_*` setting with a safe
default; docs/settings.md lists them."""

from .base import *  # noqa: F401,F403
from .celery import *  # noqa: F401,F403
from .crawler import *  # noqa: F401,F403
from .env import SettingError, envbool, envfloat, envint, envnetworks  # noqa: F401  (tests read them here)
from .crawler import CRAWLER_LEASE_SECONDS

# Hard task time limit. A task only hands a session over (waiting at most 30 s for room in
# its engine), so this never fires in practice; if it did, a prefork child and every
# session it holds would be killed (their leases expire and nothing is lost).
CELERY_TASK_TIME_LIMIT = int(CRAWLER_LEASE_SECONDS) + 60
