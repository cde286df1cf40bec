"""The frontier's public interface: what other apps (fetch, the runners, the API, the
admin, the console) may call. They call only the names in __all__; the modules behind it
are the frontier's own business:

    admission.py  URLs entering the frontier (normalize, filter, scope, seen test)
    seeding.py    seeds: admitted all or nothing, bare origins, the limit a refusal breaks, warnings
    leases.py     which worker holds which host, for how long; a session's URLs
    records.py    applying fetch results to URLs and hosts (outcomes.py decides)
    recrawl.py    visits as observations, change rates, the budget, releasing due URLs
    progress.py   is there work, when is the next, what is deferred, the summary
    controls.py   an admin's steering: limits, exclusions, expired leases
    steering.py   an operator's steering: pause/resume, host and URL actions, audited
    hoststate.py  where a host is now (leased, paused, backing off, ready, idle), in words
"""

from .admission import (
    AdmitResult,
    Candidate,
    add_urls,
    canonical_url,
    default_scope,
    fetched_here,
    flush_inlinks,
    forget_caches,
    scope_summary,
)
from .seeding import add_seeds, seed_rejection
from .controls import (
    UNSET,
    InvalidDomain,
    LimitsChange,
    canonical_domain,
    origin_excluded,
    resume_excluded_urls,
    set_trusted_domains,
    stop_queued_urls,
    sweep_expired_leases,
    trusted_domains,
    update_limits,
)
from .leases import (
    HostUpdate,
    HostView,
    Lease,
    begin_lease,
    begin_leases,
    claim_address,
    lease_ready_hosts,
    more_urls,
    release_host,
    release_hosts,
    release_leases_of,
    renew_leases,
)
from .export import url_count, url_rows
from .ownlinks import admit_taken, host_keys, judge_own_link, own_links_room
from .hoststate import WAIT_REASON_TEXT, HostState, host_state
from .idle import sweep_idle_hosts_next_round
from .importance import band_shares, score_band
from .importance import site_points
from .importance import sitemap_hint
from .pacing import STORE_FAILED, store_failure_pause
from .normalize import origin_of, url_key
from .traps import count_pattern_yield, pattern_stopped
from .limits import current_limits
from .progress import (crawl_summary, deferred_work, has_pending_work, has_work_due_within, next_change_in,
                       next_due_in)
from .wakeups import WorkListener
from .seen import peak as seen_cache_peak
from .models import UrlKind
from .records import (
    MAX_SITEMAPS,
    QueuedUrl,
    queued_urls,
    record_certificate,
    record_fetch,
    record_fetches,
    requeue_dead_letters,
    save_robots,
    settle_unstorable,
)
from .planning import plan_recrawl
from .recrawl import due_counts, has_revisits_due, release_due, sitemap_changes
from .scope import InvalidScope, ScopeSpec, parse_spec, save_scope_patterns, scope_key_taken, scope_url_test, scopes_named
from .stats import (
    crawl_paused_since,
    dead_letter_count,
    host_figures,
    host_health,
    overdue_work,
    recent_errors,
    top_hosts,
    url_figures,
)
from .steering import (
    HOST_ACTIONS,
    MAX_HOSTS_PER_ACTION,
    MAX_URLS_PER_ACTION,
    ActionResult,
    crawl_paused,
    host_action,
    host_ids_for,
    pause_crawl,
    paused_for,
    recrawl_now,
    resume_crawl,
    url_ids_for,
)


__all__ = [
    # admission
    "AdmitResult", "Candidate", "add_seeds", "add_urls", "canonical_url", "default_scope", "fetched_here",
    "flush_inlinks", "forget_caches", "scope_summary", "seed_rejection", "sitemap_hint", "count_pattern_yield", "origin_of", "url_key", "seen_cache_peak",
    "pattern_stopped", "STORE_FAILED", "store_failure_pause",
    "InvalidScope", "ScopeSpec", "parse_spec", "scope_key_taken", "save_scope_patterns",
    "scopes_named", "scope_url_test",
    # steering
    "UNSET", "InvalidDomain", "LimitsChange", "canonical_domain", "origin_excluded", "resume_excluded_urls",
    "stop_queued_urls", "sweep_expired_leases", "update_limits", "current_limits", "set_trusted_domains",
    "trusted_domains",
    "HOST_ACTIONS", "MAX_HOSTS_PER_ACTION", "MAX_URLS_PER_ACTION", "ActionResult", "crawl_paused", "host_action",
    "pause_crawl", "paused_for", "recrawl_now", "resume_crawl", "host_ids_for", "url_ids_for",
    # leases and sessions
    "HostUpdate", "HostView", "Lease", "begin_lease", "begin_leases", "claim_address", "lease_ready_hosts", "more_urls",
    "release_host", "release_hosts", "release_leases_of", "renew_leases", "score_band", "band_shares",
    "site_points", "sweep_idle_hosts_next_round",
    # a session's links to its own host (frontier/ownlinks.py)
    "admit_taken", "host_keys", "judge_own_link", "own_links_room",
    # records
    "MAX_SITEMAPS", "QueuedUrl", "UrlKind", "queued_urls", "record_fetch", "record_fetches", "requeue_dead_letters",
    "save_robots", "settle_unstorable", "record_certificate",
    # progress and figures
    "crawl_summary", "deferred_work", "has_pending_work", "has_work_due_within", "next_due_in", "next_change_in",
    "WorkListener",
    # recrawl
    "release_due", "plan_recrawl", "due_counts", "has_revisits_due", "sitemap_changes",
    "dead_letter_count", "host_figures", "recent_errors", "top_hosts", "url_figures",
    "crawl_paused_since", "host_health", "overdue_work",
    # where a host is, in words (the admin, the dashboard)
    "HostState", "WAIT_REASON_TEXT", "host_state",
    # export
    "url_rows", "url_count",
]
