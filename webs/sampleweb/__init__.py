"""Deterministic multi-host "sample web" served on loopback for crawler tests.

    from webs.sampleweb import WebConfig, SampleWeb, run_server, audit_log
"""
from .audit import audit_log
from .model import SampleWeb, WebConfig
from .runner import run_server

__all__ = ["WebConfig", "SampleWeb", "run_server", "audit_log"]
