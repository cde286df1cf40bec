import os
import signal
import socket
import threading

from crawl import instruments
from crawlerweb.celery import app
from common.schema_check import MigratedCommand
from crawl import runners


class Command(MigratedCommand):
    help = "Lease ready hosts and send each host session to its Celery fetch queue, until stopped."

    def add_arguments(self, parser):
        parser.add_argument("--name", default=f"dispatch-{socket.gethostname()}-{os.getpid()}")

    def handle(self, *args, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        instruments.crawling_process("dispatcher")  # Prometheus: CRAWLER_METRICS_PORT
        self.stdout.write(f"dispatcher {options['name']} running (Ctrl-C to stop)")
        self.stdout.flush()
        runners.run_dispatcher(options["name"], app, stop)
        self.stdout.write("dispatcher stopped")
