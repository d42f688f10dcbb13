"""Real documentation sites from Debian packages, for benchmarks and tests on real pages.

Each site is a Debian documentation package's HTML tree, served by nginx on
loopback as its own virtual host (:class:`~.servers.NginxServer`). The pages are
real: written by Sphinx, DocBook, Doxygen and hand-made generators, with the
navigation, code blocks, tables and link density of the web's documentation.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .servers import INSTALL_HINT


@dataclass(frozen=True)
class DocSite:
    """One site: its virtual host name, the package that holds it, its root and start page."""

    name: str
    package: str
    root: str
    start: str = "/index.html"


#: About 6,400 HTML pages, from 65 (Node.js: a few very large pages) to 3,900 (libstdc++'s
#: Doxygen reference: many small ones).
SITES = (
    DocSite("postgresql.docs.test", "postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html"),
    DocSite("libstdcxx.docs.test", "libstdc++-12-doc", "/usr/share/doc/gcc-12-base/libstdc++"),
    DocSite("python.docs.test", "python3.11-doc", "/usr/share/doc/python3.11/html"),
    DocSite("django.docs.test", "python-django-doc", "/usr/share/doc/python-django-doc/html"),
    DocSite("nodejs.docs.test", "nodejs-doc", "/usr/share/doc/nodejs/api"),
)
#: About 21,000 pages for long crawls (bench/memory.py): SITES, the OpenJDK API reference
#: (javadoc, 10,100 pages), Boost's documentation (BoostBook, 3,800) and Erlang/OTP's (1,060).
LONG_SITES = SITES + (
    DocSite("javadoc.docs.test", "openjdk-17-doc", "/usr/share/doc/openjdk-17-jre-headless/api"),
    DocSite("boost.docs.test", "libboost1.74-doc", "/usr/share/doc/libboost1.74-doc/doc/html"),
    DocSite("erlang.docs.test", "erlang-doc", "/usr/share/doc/erlang-doc", "/doc/index.html"),
)
#: Shapes SITES and LONG_SITES lack, for ``--sites wide`` of bench/throughput.py and bench/memory.py:
#: GHC's Haddock reference (3,472 pages, 19 of 1 MB or more, up to 13 MB: hyperlinked source) and
#: GTK 4's gi-docgen reference (about 9,100 generated pages over gtk4, gdk4, gsk4, Pango, GLib and
#: GObject), beside SITES' five (many small pages, Node.js's 6 MB one).
WIDE_SITES = SITES + (
    DocSite("ghc.docs.test", "ghc-doc", "/usr/share/doc/ghc-doc/html"),
    DocSite("gtk4.docs.test", "libgtk-4-doc", "/usr/share/doc/libgtk-4-doc", "/gtk4/index.html"),
)
#: Shapes none of the others have: the Rust standard library's rustdoc reference (32,000 pages),
#: the Apache manual in eleven languages and their charsets (links made for content negotiation,
#: which a static server answers with 404) and LilyPond's manuals (pages of 4-7 MB, dead links).
OTHER_SITES = (
    DocSite("rust.docs.test", "rust-doc", "/usr/share/doc/rust-doc/html"),
    DocSite("apache.docs.test", "apache2-doc", "/usr/share/doc/apache2-doc/manual"),
    DocSite("lilypond.docs.test", "lilypond-doc-html", "/usr/share/doc/lilypond/html"),
)
#: Small packages the test suite reads real pages from (``scripts/system-deps.sh`` installs them).
TEST_SITES = (SITES[0], SITES[4])
#: About 1,750 pages for the test suite's memory crawl (``scripts/system-deps.sh`` installs them).
MEMORY_TEST_SITES = (SITES[0], SITES[2], SITES[4])

#: Sites in five languages that declare them (<html lang>), Sphinx-built, for the report's
#: language figures; Debian Reference (DocBook, languages not declared) adds undeclared pages
#: in Japanese. ``scripts/system-deps.sh`` installs them.
LANGUAGE_SITES = tuple(
    DocSite(f"devref-{lang}.docs.test", f"developers-reference-{lang}", f"/usr/share/doc/developers-reference-{lang}/docs")
    for lang in ("de", "fr", "it", "ja", "ru")
) + (DocSite("debref.docs.test", "debian-reference-ja", "/usr/share/debian-reference", "/index.ja.html"),)

#: Two releases of one project's reference (cairomm 1.14 and 1.16, Doxygen), the same paths in
#: both: most pages differ only by the release number, some read the same. ``scripts/system-deps.sh``
#: installs them (near-duplicate tests and bench/near_duplicates.py).
RELEASE_SITES = (
    DocSite("cairomm114.docs.test", "libcairomm-1.0-doc", "/usr/share/doc/libcairomm-1.0-doc/reference/html"),
    DocSite("cairomm116.docs.test", "libcairomm-1.16-doc", "/usr/share/doc/libcairomm-1.16-doc/reference/html"),
)

#: Two releases of one Sphinx reference whose template changed between them (the Linux kernel's
#: documentation, 6.1 with Read the Docs' theme and 6.12 with alabaster): 1,195 pages' articles
#: read the same in both. ``scripts/system-deps.sh`` installs them (a near-duplicates test).
SPHINX_RELEASE_SITES = (
    DocSite("linux61.docs.test", "linux-doc-6.1", "/usr/share/doc/linux-doc-6.1/html"),
    DocSite("linux612.docs.test", "linux-doc-6.12", "/usr/share/doc/linux-doc-6.12/html"),
)

#: A mix of shapes the other mixes lack, for ``--sites kernel``: two releases of the Linux
#: kernel's Sphinx documentation (6,800 pages of 74 links on average, a third of them near
#: duplicates of the other release's), six small sites in five languages (LANGUAGE_SITES), and two
#: releases of one Doxygen reference whose pages mostly read the same.
KERNEL_SITES = (*SPHINX_RELEASE_SITES, *LANGUAGE_SITES, *RELEASE_SITES)
#: The site mixes the benches take by name (``--sites``).
SITE_SETS = {"default": SITES, "long": LONG_SITES, "wide": WIDE_SITES, "other": OTHER_SITES,
             "kernel": KERNEL_SITES}

#: Every site is a subdomain of this: a crawl of them must keep to it (ALLOWED_DOMAINS), since
#: the pages link to the real web.
DOMAIN = "docs.test"
HOST_RESOLVE = f"*.{DOMAIN}=127.0.0.1"


def ensure_installed(sites: tuple[DocSite, ...] = SITES) -> None:
    """Install the sites' packages with apt-get when root; otherwise fail naming the command."""
    missing = sorted({s.package for s in sites if not Path(s.root, s.start.lstrip("/")).exists()})
    if not missing:
        return
    if os.geteuid() != 0:
        raise RuntimeError("documentation packages missing. Run: " + INSTALL_HINT.format(package=" ".join(missing)))
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def ensure_files(files: dict[str, tuple[str, str]]) -> None:
    """:func:`ensure_installed` for single files of packages (``{name: (package, path)}``)."""
    ensure_installed(tuple(DocSite(name, package, str(Path(path).parent), "/" + Path(path).name)
                           for name, (package, path) in files.items()))


#: Where files taken out of packages that are not installed are kept (:func:`extracted`).
DEB_CACHE = Path(os.environ.get("CRAWLPROJ_DEB_CACHE") or Path.home() / ".cache" / "crawlproj" / "debs")


def extracted(package: str, path: str) -> Path:
    """``path`` of Debian's ``package``, taken out of the package without installing it: for a
    few files of a package whose dependencies are large (the TeX Live documentation packages
    pull 170 MB of TeX Live). Downloaded with apt-get once, kept in :data:`DEB_CACHE`;
    ``scripts/system-deps.sh`` does the same for ``make``."""
    target = DEB_CACHE / package / path.lstrip("/")
    if target.exists():
        return target
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        download = ["apt-get", "download", "-qq", package]
        if subprocess.run(download, cwd=tmp, capture_output=True).returncode != 0:
            if os.geteuid() != 0:
                raise RuntimeError(f"cannot download Debian package {package}: run scripts/system-deps.sh")
            subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
            subprocess.run(download, cwd=tmp, check=True, capture_output=True)
        deb = next(Path(tmp).glob("*.deb"))
        (DEB_CACHE / package).mkdir(parents=True, exist_ok=True)
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(DEB_CACHE / package), "." + path], stdin=tar.stdout, check=True)
        tar.wait()
    return target


def html_files(site: DocSite, limit: int | None = None) -> list[Path]:
    """The site's HTML files, sorted (the first ``limit``, spread evenly over the site)."""
    files = sorted(p for p in Path(site.root).rglob("*.htm*") if p.is_file())
    if limit is not None and len(files) > limit:
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return files
