"""Figures as a person reads them: durations in the unit that fits, moments in one named time
zone (settings.TIME_ZONE), rates per day. The admin and the dashboard's server side print
through here (the admin's own date formats match: crawlerweb/formats/), so "1.6 ms" and
"2026-11-26 18:08:02 UTC" read the same everywhere; the exact value stays one hover away
(`exact`).
"""

from datetime import datetime

from django.utils import timezone
from django.utils.html import format_html

# (seconds in the unit, its name, the largest value shown in it before moving up)
_UNITS = ((1e-3, "ms", 1000), (1, "s", 120), (60, "min", 120), (3600, "h", 48), (86400, "days", None))


def duration(seconds: float | None, *, empty: str = "–", figures: int = 3) -> str:
    """`figures` significant figures at most, in the largest unit that stays readable:
    0.0016416 → "1.64 ms", 10800 → "3 h", 90 → "90 s", 400000 → "4.63 days"."""
    if seconds is None:
        return empty
    if seconds == 0:
        return "0 s"
    magnitude = abs(seconds)
    for size, name, limit in _UNITS:
        if magnitude < size:
            continue
        if limit is None or magnitude / size < limit:
            return f"{_figures(seconds / size, figures)} {name}"
    return f"{_figures(seconds * 1000, figures)} ms"  # under a millisecond


def _figures(value: float, figures: int = 3) -> str:
    text = f"{value:.{figures}g}"
    if "e" in text:  # 3 figures of a big number: no exponent for people
        text = f"{value:.0f}"
    return text.removesuffix(".0")


def moment(value: datetime | None, *, empty: str = "–") -> str:
    """A point in time in the configured zone, named: "2026-11-26 18:08:02 UTC"."""
    if value is None:
        return empty
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname() or ''}".rstrip()


def relative(value: datetime | None, now: datetime | None = None, *, empty: str = "–") -> str:
    """"in 3 min", "4 min ago", "now" (within a second): two figures, a clock's precision."""
    if value is None:
        return empty
    seconds = (value - (now or timezone.now())).total_seconds()
    if abs(seconds) < 1:
        return "now"
    return f"in {duration(seconds, figures=2)}" if seconds > 0 else f"{duration(-seconds, figures=2)} ago"


def per_day(rate: float | None, *, empty: str = "–") -> str:
    """A rate per day, with its period when that is easier to read: 0.5 → "0.5 a day (one
    every 2 days)", 24 → "24 a day (one every 1 h)"."""
    if rate is None:
        return empty
    if rate <= 0:
        return "0 a day"
    return f"{_figures(rate)} a day (one every {duration(86400 / rate)})"


def exact(shown: str, exact_value) -> str:
    """HTML: the readable text, with the exact stored value on hover."""
    return format_html('<span title="{}">{}</span>', "" if exact_value is None else str(exact_value), shown)
