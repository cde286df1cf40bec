"""CPU time and memory of processes, read from Linux /proc, for the benchmark.

PostgreSQL is many processes that come and go (one backend per connection); its CPU is
the sum over the live ones plus what the postmaster has collected from the ones that
exited (cutime/cstime), so a closed connection's work is not lost from the figure.
"""

import os
import threading
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


@dataclass(frozen=True)
class TcpSocket:
    local_port: int
    remote_port: int
    state: str  # the kernel's hex code: "0A" listening, "01" established, "06" TIME_WAIT, …
    inode: str  # "0" for a socket no process holds (TIME_WAIT)


def tcp_sockets() -> list[TcpSocket]:
    """Every TCP socket of this machine's network namespace, IPv4 and IPv6 (/proc/net/tcp)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            found.append(TcpSocket(int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16),
                                   fields[3], fields[9]))
    return found


def socket_inodes(pid: int | str = "self") -> set[str]:
    """The inodes of the sockets a process holds open (its /proc/PID/fd links)."""
    inodes = set()
    try:
        for fd in os.scandir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(fd.path)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return inodes


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU of a live process; with children=True, plus its reaped children."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / CLOCK_TICKS


def process_tree(pid: int) -> list[int]:
    """pid and its live descendants (a Celery worker and its prefork pool children)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None:
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(parents.get(current, []))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and its descendants, live or reaped."""
    return sum(cpu_seconds(p, children=True) for p in process_tree(pid))


def tree_peak_rss_mb(pid: int) -> float:
    """The largest peak RSS in a process tree (each pool child is one engine)."""
    return max(peak_rss_mb(p) for p in process_tree(pid))


def tree_rss_mb(pid: int) -> float:
    return max(rss_mb(p) for p in process_tree(pid))


def _status_kib(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def peak_rss_mb(pid: int) -> float:
    return round(_status_kib(pid, "VmHWM") / 1024, 1)


def rss_mb(pid: int) -> float:
    return round(_status_kib(pid, "VmRSS") / 1024, 1)


def pids_named(prefix: str) -> list[int]:
    """Processes whose command name (comm) starts with `prefix`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().startswith(prefix):
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return found


@dataclass
class ServiceMeter:
    """CPU of a server made of processes named `prefix` (postgres, redis-server)."""

    prefix: str
    start: float = 0.0

    def total(self) -> float:
        pids = set(pids_named(self.prefix))
        # The root (the postmaster: its parent is not one of ours) also carries the CPU of
        # its exited children.
        return sum(cpu_seconds(pid, children=_parent(pid) not in pids) for pid in pids)

    def begin(self) -> None:
        self.start = self.total()

    def elapsed_cpu(self) -> float:
        return max(0.0, self.total() - self.start)

    def peak_rss_mb(self) -> float:
        return max((peak_rss_mb(pid) for pid in pids_named(self.prefix)), default=0.0)


def _parent(pid: int) -> int:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else 0


def wait_metered(proc, timeout: float):
    """Wait for a child to exit and return (exit code, its resource usage): os.wait4 gives
    the CPU and peak RSS of exactly that child. A watchdog kills it after `timeout`
    seconds (then TimeoutError)."""
    timed_out = threading.Event()

    def expire():
        timed_out.set()
        proc.kill()

    watchdog = threading.Timer(timeout, expire)
    watchdog.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        watchdog.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if timed_out.is_set():
        raise TimeoutError(f"{proc.args[0] if isinstance(proc.args, list) else proc.args} killed after {timeout} s")
    return proc.returncode, usage
