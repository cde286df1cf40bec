"""One simulation in a process of its own (spawned: Django reads its settings once)."""
from __future__ import annotations

import copy
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

from bench import freshness


def run_one(job: tuple) -> dict:
    """One policy on one seed: the settings bench.freshness would give the crawler."""
    args, policy, seed = job
    args = copy.copy(args)
    args.seed = seed  # the web bench.freshness would serve (its budget on --realtime)
    with tempfile.TemporaryDirectory() as directory:
        directory = Path(directory)
        env = freshness.crawl_settings(args, policy, directory, directory / "oracle.jsonl")
        os.environ.update(env)
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawlerweb.settings")
        os.environ["DATABASE_URL"] = f"sqlite:///{directory / 'unused.sqlite3'}"
        import django
        django.setup()
        from .sim import Simulation
        sim = Simulation(hosts=args.hosts, pages=args.pages, seed=seed, day_seconds=args.day_seconds, days=args.days,
                         budget_ratio=args.budget_ratio, history_days=args.history_days, lag=args.lag,
                         session_tail=args.session_tail, first_spacing=args.first_spacing,
                         profile=freshness.web_config(args).profile, budget_per_day=freshness.budget_per_sim_day(args),
                         classes=freshness.rate_classes(args))
        experiment = os.environ.get("RECRAWLSIM_EXPERIMENT")  # a file with install(sim): a prototype
        if experiment:
            import importlib.util
            spec = importlib.util.spec_from_file_location("recrawlsim_experiment", experiment)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            module.install(sim)
        return {"policy": policy, "seed": seed, **asdict(sim.run())}
