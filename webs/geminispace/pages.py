"""What the loopback Geminispace's model describes: links and answers."""
from __future__ import annotations

from dataclasses import dataclass

GEMTEXT = "text/gemini"
GEMTEXT_LANG = "text/gemini; charset=utf-8; lang=en"


@dataclass(frozen=True)
class Link:
    href: str                            # as written on the page
    label: str
    target: tuple[int, str] | None = None  # (capsule, path) inside the space


@dataclass(frozen=True)
class Page:
    """One answer, as the model describes it (gemtext bodies are rendered on demand)."""
    status: int
    meta: str
    kind: str = "gemtext"  # gemtext | plain | image | robots | redirect | status | hostile
    capsule: int = 0
    path: str = "/"
    title: str = ""
    unique: str | None = None
    code_word: str | None = None
    art_markers: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    target: tuple[int, str] | None = None  # a redirect's, inside the space
    text: str = ""                         # literal body of robots/plain/special pages


NOT_FOUND = Page(51, "Not found", kind="status")
