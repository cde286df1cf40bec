"""A loopback Geminispace for tests and the bench: capsules of gemtext pages over TLS on
127.0.2.x, with robots.txt, special and hostile answers, changing certificates, and a
request log to audit a crawl's politeness.

In the test's process (a thread with its own event loop):

    from webs.geminispace import geminispace
    with geminispace(capsules=4, pages=20, seed=1, log=path, slow_delay=0.2) as space:
        space.seeds, space.url("/gemlog/1.gmi", capsule=2), space.reachable(), space.words()
        space.special["slow-down"], space.hostile["endless-body"]
        space.replace_certificate(1); space.requests(); space.audit(delay=0.1)

In a subprocess (the bench: the server must not share a GIL with the crawler):
`run_server(SpaceConfig(...), log)`, or `python -m webs.geminispace serve --port 0 ...`.
model.py describes the space, server.py serves it, audit.py reads the log.
"""
from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import replace

from ..httpserver import serving
from .audit import Entry, audit, audit_log, count_violations, read_log
from .model import DEFAULT_AGENTS, HOSTILE, SPECIALS, GeminiSpace, SpaceConfig, capsule_address
from .server import make_space, remove_folder, temporary_folder

__all__ = ["geminispace", "RunningSpace", "GeminiSpace", "SpaceConfig", "run_server", "read_log", "audit",
           "audit_log", "count_violations", "Entry", "capsule_address", "DEFAULT_AGENTS", "SPECIALS", "HOSTILE"]

START_SECONDS = 10.0


class RunningSpace(GeminiSpace):
    """The model of a space being served by a thread of this process: everything
    GeminiSpace describes, plus certificates, the log and stop()."""

    def __init__(self, config: SpaceConfig, log_path=None):
        self.folder = temporary_folder()
        model, self._server = make_space(config, log_path or f"{self.folder}/requests.log", self.folder)
        super().__init__(model.config, port=model.port)
        self._server.space = self
        self.log_path = self._server.log.path
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_quiet)
        self._thread = threading.Thread(target=self._run, name=f"geminispace-{self.port}", daemon=True)
        self._thread.start()
        try:
            self._call(self._server.start())
        except BaseException:
            self.stop()
            raise

    def _run(self):
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def _call(self, coroutine, timeout: float = START_SECONDS):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def stop(self) -> None:
        """Close every listener and connection, flush and close the log, end the thread."""
        if not self._thread.is_alive():
            return
        try:
            self._call(self._server.stop(), timeout=5.0)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5.0)
            if not self._thread.is_alive():
                self._loop.close()
            remove_folder(self.folder)

    # ------------------------------------------------------------ certificates
    def fingerprint(self, capsule: int) -> str:
        """SHA-256 of the capsule's current certificate (DER), hex."""
        return self._server.certificates[capsule].fingerprint

    def key_fingerprint(self, capsule: int) -> str:
        """SHA-256 of the capsule's current public key (SubjectPublicKeyInfo, DER), hex."""
        return self._server.certificates[capsule].key_fingerprint

    def certificate_pem(self, capsule: int) -> bytes:
        return self._server.certificates[capsule].pem

    def not_after(self, capsule: int):
        """The current certificate's expiry (an aware datetime, UTC)."""
        return self._server.certificates[capsule].not_after

    def replace_certificate(self, capsule: int, keep_key: bool = False) -> str:
        """Give the capsule a new self-signed certificate (a new key too unless keep_key),
        served from the next connection on; its fingerprint."""
        async def replace_it():
            return self._server.replace_certificate(capsule, keep_key).fingerprint
        return self._call(replace_it())

    # ------------------------------------------------------------ the log
    def flush_log(self) -> None:
        async def flush():
            self._server.log.flush()
        self._call(flush())

    def requests(self) -> list[Entry]:
        """The log so far (flushed first)."""
        self.flush_log()
        return read_log(self.log_path)

    def audit(self, delay: float = 0.0, **options) -> dict:
        """audit.audit() of the log so far, against this space."""
        return audit(self.requests(), delay, space=self, **options)

    def violations(self, delay: float = 0.0, **options) -> int:
        return self.audit(delay, **options)["violations"]


def _quiet(loop, context):
    """Clients that vanish mid-handshake are this server's daily bread, not errors."""
    exception = context.get("exception")
    if isinstance(exception, (ConnectionError, TimeoutError, OSError)):
        return
    loop.default_exception_handler(context)


@contextlib.contextmanager
def geminispace(capsules: int = 4, pages: int = 20, seed: int = 1, *, log=None, **options):
    """Serve a space (SpaceConfig's fields as keywords) in a thread until the block exits;
    yields the RunningSpace. The log goes to `log` (a path), else to a temporary file."""
    space = RunningSpace(SpaceConfig(capsules=capsules, pages=pages, seed=seed, **options), log)
    try:
        yield space
    finally:
        space.stop()


@contextlib.contextmanager
def run_server(config: SpaceConfig | None = None, log_path=None, *, ready_timeout: float = 20.0):
    """Serve `config` from `python -m webs.geminispace serve` in a subprocess until the block
    exits; yields the GeminiSpace (with the real port), whose `ready` holds the READY line
    (certificate fingerprints included) and `server_pid` the process."""
    config = config or SpaceConfig()
    argv = config.to_argv() + (["--log", str(log_path)] if log_path is not None else [])
    with serving("webs.geminispace", argv, ready_timeout=ready_timeout) as (proc, ready):
        space = GeminiSpace(replace(config, port=ready["port"]))
        space.ready = ready
        space.log_path = log_path
        space.server_pid = proc.pid
        yield space
