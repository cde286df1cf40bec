"""The corpus: documentation sites Debian ships as packages, on disk under var/searcheval/.

Why Debian's doc packages: real, large, hand-written sites with Sphinx indexes (the
queries' ground truth), fetched through a registry we can reach (apt), pinned by the
package version, and no site of anyone's hit by a benchmark.

`apt-get download PKG` (no root needed) into var/searcheval/debs/, then `dpkg-deb -x` into
var/searcheval/<pkg>/; both are skipped when already done. The site's root is the
directory holding genindex.html (the one with the most pages, should there be several).
Debian replaces files such as _static/jquery.js by symlinks into other packages
(/usr/share/javascript/...); those are dangling here and the server answers 404 for them.

Pages on disk: regular *.html files under the root (symlinks not followed), for the
coverage line of the report.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Five Sphinx sites, about 1,900 HTML pages: Django 3.2 (692), Python 3.11 (530, its index
# split into genindex-A.html ... genindex-all.html), Celery (350), SQLAlchemy (224, the
# older <dl> index markup) and Sphinx itself (137).
DEFAULT_PACKAGES = ("python-django-doc", "python3.11-doc", "python-celery-doc", "python-sqlalchemy-doc",
                    "sphinx-doc")
DOWNLOAD_TIMEOUT = 600


@dataclass(frozen=True)
class Site:
    name: str  # the package
    version: str
    root: Path  # the directory holding genindex.html
    pages: int  # *.html files under root


def download(package: str, debs: Path) -> Path:
    """The package's .deb in `debs`, downloaded with apt-get unless it is there already."""
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        result = subprocess.run(["apt-get", "download", package], cwd=debs, text=True, timeout=DOWNLOAD_TIMEOUT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        found = sorted(debs.glob(f"{package}_*.deb"))
        if result.returncode != 0 or not found:
            raise RuntimeError(f"apt-get download {package} failed (is `apt-get update` done?):\n"
                               f"{result.stdout[-2000:]}")
    return found[-1]


def deb_version(deb: Path) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True, text=True,
                          stdout=subprocess.PIPE).stdout.strip()


def extract(deb: Path, target: Path) -> None:
    """`dpkg-deb -x` into target, once (a marker file names the .deb extracted)."""
    marker = target / ".searcheval-extracted"
    if marker.exists() and marker.read_text().strip() == deb.name:
        return
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(target)], check=True, timeout=DOWNLOAD_TIMEOUT)
    marker.write_text(deb.name + "\n")


def html_pages(root: Path) -> list[str]:
    """Regular *.html files under root (relative POSIX paths, sorted), symlinks not followed."""
    pages = []
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if name.endswith(".html") and not os.path.islink(path):
                pages.append(Path(path).relative_to(root).as_posix())
    return sorted(pages)


def count_pages(root: Path) -> int:
    return len(html_pages(root))


def html_root(tree: Path) -> Path:
    """The directory under `tree` that holds genindex.html (the largest, if several)."""
    roots = [Path(directory) for directory, _, files in os.walk(tree) if "genindex.html" in files]
    if not roots:
        raise RuntimeError(f"no genindex.html under {tree}: not a Sphinx site")
    return max(roots, key=lambda root: (count_pages(root), -len(root.parts)))


def prepare(packages, workdir: Path) -> list[Site]:
    """Download and extract each package; its site on disk."""
    sites = []
    for package in packages:
        deb = download(package, workdir / "debs")
        extract(deb, workdir / package)
        root = html_root(workdir / package)
        sites.append(Site(package, deb_version(deb), root, count_pages(root)))
    return sites
