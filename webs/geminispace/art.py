"""The drawings and code of the loopback Geminispace's pages: FIGLet banners, box,
block-element and braille drawings (the ASCII art a gemtext parser must leave out of the
indexed text) and code blocks (which it must keep).

Every drawing and snippet here is free of the letter "q": on a page of the space, a "q"
belongs to one of its marker words only (model.py).
"""
from __future__ import annotations

import math
import random

# pyfiglet 1.0.4's rendering of four words in four fonts (FIGlet's standard, slant, small
# and big), kept as text: no dependency at run time.
FIGLET = (
    ('standard', 'Gemini', (
        '  ____                _       _',
        ' / ___| ___ _ __ ___ (_)_ __ (_)',
        "| |  _ / _ \\ '_ ` _ \\| | '_ \\| |",
        '| |_| |  __/ | | | | | | | | | |',
        ' \\____|\\___|_| |_| |_|_|_| |_|_|',
    )),
    ('standard', 'Gemlog', (
        '  ____                _',
        ' / ___| ___ _ __ ___ | | ___   __ _',
        "| |  _ / _ \\ '_ ` _ \\| |/ _ \\ / _` |",
        '| |_| |  __/ | | | | | | (_) | (_| |',
        ' \\____|\\___|_| |_| |_|_|\\___/ \\__, |',
        '                              |___/',
    )),
    ('standard', 'Capsule', (
        '  ____                      _',
        ' / ___|__ _ _ __  ___ _   _| | ___',
        "| |   / _` | '_ \\/ __| | | | |/ _ \\",
        '| |__| (_| | |_) \\__ \\ |_| | |  __/',
        ' \\____\\__,_| .__/|___/\\__,_|_|\\___|',
        '           |_|',
    )),
    ('standard', 'Welcome', (
        '__        __   _',
        '\\ \\      / /__| | ___ ___  _ __ ___   ___',
        " \\ \\ /\\ / / _ \\ |/ __/ _ \\| '_ ` _ \\ / _ \\",
        '  \\ V  V /  __/ | (_| (_) | | | | | |  __/',
        '   \\_/\\_/ \\___|_|\\___\\___/|_| |_| |_|\\___|',
    )),
    ('slant', 'Gemini', (
        '   ______               _       _',
        '  / ____/__  ____ ___  (_)___  (_)',
        ' / / __/ _ \\/ __ `__ \\/ / __ \\/ /',
        '/ /_/ /  __/ / / / / / / / / / /',
        '\\____/\\___/_/ /_/ /_/_/_/ /_/_/',
    )),
    ('slant', 'Gemlog', (
        '   ______               __',
        '  / ____/__  ____ ___  / /___  ____ _',
        ' / / __/ _ \\/ __ `__ \\/ / __ \\/ __ `/',
        '/ /_/ /  __/ / / / / / / /_/ / /_/ /',
        '\\____/\\___/_/ /_/ /_/_/\\____/\\__, /',
        '                            /____/',
    )),
    ('slant', 'Capsule', (
        '   ______                       __',
        '  / ____/___ _____  _______  __/ /__',
        ' / /   / __ `/ __ \\/ ___/ / / / / _ \\',
        '/ /___/ /_/ / /_/ (__  ) /_/ / /  __/',
        '\\____/\\__,_/ .___/____/\\__,_/_/\\___/',
        '          /_/',
    )),
    ('slant', 'Welcome', (
        ' _       __     __',
        '| |     / /__  / /________  ____ ___  ___',
        '| | /| / / _ \\/ / ___/ __ \\/ __ `__ \\/ _ \\',
        '| |/ |/ /  __/ / /__/ /_/ / / / / / /  __/',
        '|__/|__/\\___/_/\\___/\\____/_/ /_/ /_/\\___/',
    )),
    ('small', 'Gemini', (
        '  ___           _      _',
        ' / __|___ _ __ (_)_ _ (_)',
        "| (_ / -_) '  \\| | ' \\| |",
        ' \\___\\___|_|_|_|_|_||_|_|',
    )),
    ('small', 'Gemlog', (
        '  ___           _',
        ' / __|___ _ __ | |___  __ _',
        "| (_ / -_) '  \\| / _ \\/ _` |",
        ' \\___\\___|_|_|_|_\\___/\\__, |',
        '                      |___/',
    )),
    ('small', 'Capsule', (
        '  ___                   _',
        ' / __|__ _ _ __ ____  _| |___',
        "| (__/ _` | '_ (_-< || | / -_)",
        ' \\___\\__,_| .__/__/\\_,_|_\\___|',
        '          |_|',
    )),
    ('small', 'Welcome', (
        '__      __   _',
        '\\ \\    / /__| |__ ___ _ __  ___',
        " \\ \\/\\/ / -_) / _/ _ \\ '  \\/ -_)",
        '  \\_/\\_/\\___|_\\__\\___/_|_|_\\___|',
    )),
    ('big', 'Gemini', (
        '  _____                _       _',
        ' / ____|              (_)     (_)',
        '| |  __  ___ _ __ ___  _ _ __  _',
        "| | |_ |/ _ \\ '_ ` _ \\| | '_ \\| |",
        '| |__| |  __/ | | | | | | | | | |',
        ' \\_____|\\___|_| |_| |_|_|_| |_|_|',
    )),
    ('big', 'Gemlog', (
        '  _____                _',
        ' / ____|              | |',
        '| |  __  ___ _ __ ___ | | ___   __ _',
        "| | |_ |/ _ \\ '_ ` _ \\| |/ _ \\ / _` |",
        '| |__| |  __/ | | | | | | (_) | (_| |',
        ' \\_____|\\___|_| |_| |_|_|\\___/ \\__, |',
        '                                __/ |',
        '                               |___/',
    )),
    ('big', 'Capsule', (
        '  _____                      _',
        ' / ____|                    | |',
        '| |     __ _ _ __  ___ _   _| | ___',
        "| |    / _` | '_ \\/ __| | | | |/ _ \\",
        '| |___| (_| | |_) \\__ \\ |_| | |  __/',
        ' \\_____\\__,_| .__/|___/\\__,_|_|\\___|',
        '            | |',
        '            |_|',
    )),
    ('big', 'Welcome', (
        '__          __  _',
        '\\ \\        / / | |',
        ' \\ \\  /\\  / /__| | ___ ___  _ __ ___   ___',
        "  \\ \\/  \\/ / _ \\ |/ __/ _ \\| '_ ` _ \\ / _ \\",
        '   \\  /\\  /  __/ | (_| (_) | | | | | |  __/',
        '    \\/  \\/ \\___|_|\\___\\___/|_| |_| |_|\\___|',
    )),
)

_BOX = ("╔═╗║╚╝", "┌─┐│└┘", "╭─╮│╰╯", "┏━┓┃┗┛")
_SHADES = "░▒▓█"
_BRAILLE_BITS = ((0, 0, 0x01), (0, 1, 0x02), (0, 2, 0x04), (1, 0, 0x08), (1, 1, 0x10), (1, 2, 0x20),
                 (0, 3, 0x40), (1, 3, 0x80))


def figlet_banner(rng: random.Random) -> list[str]:
    return list(rng.choice(FIGLET)[2])


def box_banner(rng: random.Random, title: str) -> list[str]:
    """The title in a frame of box-drawing characters, between two bars of shades."""
    corner_l, horizontal, corner_r, vertical, bottom_l, bottom_r = rng.choice(_BOX)
    width = len(title) + 6
    shade = "".join(rng.choice(_SHADES) for _ in range(width + 2))
    return [shade,
            corner_l + horizontal * width + corner_r,
            f"{vertical}   {title}   {vertical}",
            bottom_l + horizontal * width + bottom_r,
            shade[::-1]]


def block_drawing(rng: random.Random, width: int = 24, height: int = 6) -> list[str]:
    """A landscape of block elements: hills of full blocks under a shaded sky."""
    lines = []
    heights = [max(1, int(height / 2 + math.sin(x / 3 + rng.random()) * height / 3)) for x in range(width)]
    for row in range(height, 0, -1):
        lines.append("".join("█" if h >= row else rng.choice(" ░") for h in heights).rstrip())
    return [line for line in lines if line]


def braille_drawing(rng: random.Random) -> list[str]:
    """Two circles (a planet and its ring seen from above) drawn with braille dots."""
    width = height = 40
    outer, inner = rng.randint(14, 18), rng.randint(6, 10)
    dots = set()
    for step in range(720):
        angle = step * math.pi / 360
        for radius in (outer, inner):
            dots.add((int(20 + radius * math.cos(angle)), int(20 + radius * math.sin(angle))))
    lines = []
    for row in range(0, height, 4):
        cells = []
        for column in range(0, width, 2):
            value = sum(bit for dx, dy, bit in _BRAILLE_BITS if (column + dx, row + dy) in dots)
            cells.append(chr(0x2800 + value))
        lines.append("".join(cells).rstrip("\u2800"))
    return [line for line in lines if line]


def code_snippet(rng: random.Random, name: str) -> tuple[str, list[str]]:
    """(alt text, lines) of a code block that defines or runs `name`."""
    kind = rng.randrange(3)
    if kind == 0:
        return "python", [
            f"def {name}(capsule, pages):",
            '    """Count the pages of one capsule."""',
            "    total = 0",
            "    for page in pages:",
            "        if page.startswith(capsule):",
            "            total += 1",
            "    return total",
        ]
    if kind == 1:
        return "c", [
            f"static int {name}(const char *line, size_t n)",
            "{",
            "    for (size_t i = 0; i < n; i++) { if (line[i] == '\\t') return (int)i; }",
            "    return -1;",
            "}",
        ]
    return "shell session", [
        "$ printf 'gemini://localhost/\\r\\n' | openssl s_client -connect localhost:1965 -ign_eof 2>/dev/null | head -1",
        "20 text/gemini",
        f"$ {name} --depth 3 gemini://localhost/",
        "fetched 42 pages in 3.1 s",
    ]
