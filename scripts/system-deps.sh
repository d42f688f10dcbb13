#!/usr/bin/env bash
# Make sure the system packages are here. `system-deps.sh crawl` (make crawl): what crawling
# needs, chromium (rendering) and redis-server (WORKERS=N). Without an argument (make setup, the
# tests): also nginx, pdftotext and the Debian documentation packages whose real pages the tests
# read. As root, install the missing ones with apt-get. Otherwise print the exact command and fail.
set -euo pipefail
# (pdftotext: bench/pdf_accents.py's reference text.)
declare -A package=([redis-server]=redis-server [nginx]=nginx-light [chromium]=chromium [pdftotext]=poppler-utils)
binaries=(redis-server chromium)
[ "${1:-}" = crawl ] || binaries+=(nginx pdftotext)
missing=()
for binary in "${binaries[@]}"; do
  if ! command -v "$binary" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$binary" ]; then
    missing+=("${package[$binary]}")
  fi
done
install_missing() {
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "installing system packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "missing system packages. Run this, then try again:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
}
if [ "${1:-}" = crawl ]; then
  install_missing
  exit 0
fi
# Real pages (sandbox.docsites.TEST_SITES and MEMORY_TEST_SITES): their start pages tell whether they are here.
# (and sandbox.docsites.LANGUAGE_SITES: the report's languages on real pages;
# RELEASE_SITES and SPHINX_RELEASE_SITES: two releases of one reference, for near-duplicates).
declare -A docs=([postgresql-doc-15]=/usr/share/doc/postgresql-doc-15/html/index.html
                 [nodejs-doc]=/usr/share/doc/nodejs/api/index.html
                 [python3.11-doc]=/usr/share/doc/python3.11/html/index.html
                 [debian-reference-ja]=/usr/share/debian-reference/index.ja.html
                 [libcairomm-1.0-doc]=/usr/share/doc/libcairomm-1.0-doc/reference/html/index.html
                 [libcairomm-1.16-doc]=/usr/share/doc/libcairomm-1.16-doc/reference/html/index.html
                 # two releases of the kernel's Sphinx documentation (SPHINX_RELEASE_SITES)
                 [linux-doc-6.1]=/usr/share/doc/linux-doc-6.1/html/index.html
                 [linux-doc-6.12]=/usr/share/doc/linux-doc-6.12/html/index.html
                 # real PDFs (sandbox.pdfs.REAL_PDFS)
                 [libtasn1-doc]=/usr/share/doc/libtasn1-doc/libtasn1.pdf
                 [bzip2-doc]=/usr/share/doc/bzip2/manual.pdf.gz
                 [shared-mime-info]=/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf
                 # real PDFs whose first line is not their title (sandbox.pdfs.TITLE_PDFS)
                 [docbook-xsl-doc-pdf]=/usr/share/doc/docbook-xsl-doc-pdf/doc/reference.pdf.gz
                 [libdmalloc-dev]=/usr/share/doc/libdmalloc-dev/dmalloc.pdf.gz
                 [fasta3-doc]=/usr/share/doc/fasta3/fasta_guide.pdf
                 [ecasound-doc]=/usr/share/doc/ecasound/ecasound_eci_doc.pdf.gz
                 # real URLs with session ids and story ids (sandbox.realurls.URL_FILES)
                 [libxml-rss-perl]=/usr/share/doc/libxml-rss-perl/examples/1.0/slash.rdf
                 [awstats]=/usr/share/doc/awstats/html/awstats_faq.html
                 # documentation generators' content kept whole (tests/test_content.py)
                 [gettext-doc]=/usr/share/doc/gettext/gettext_5.html
                 [apache2-doc]=/usr/share/doc/apache2-doc/manual/en/server-wide.html
                 [docutils-doc]=/usr/share/doc/docutils-doc/docs/user/smartquotes.html)
for lang in de fr it ja ru; do
  docs[developers-reference-$lang]=/usr/share/doc/developers-reference-$lang/docs/index.html
done
for pkg in "${!docs[@]}"; do
  [ -e "${docs[$pkg]}" ] || missing+=("$pkg")
done
install_missing
# Files taken out of packages without installing them, their dependencies or their size being
# large (TeX Live's documentation pulls 170 MB of TeX Live; the JDK's, GHC's and GTK's API
# references are 276, 280 and 75 MB):
# sandbox.pdfs.ACCENT_PDFS and tests/test_content.py's javadoc pages, as sandbox.docsites.extracted does.
cache=${CRAWLPROJ_DEB_CACHE:-$HOME/.cache/crawlproj/debs}
javadoc=/usr/share/doc/openjdk-17-jre-headless/api
declare -A extract=([texlive-lang-polish]=/usr/share/doc/texlive-doc/latex/przechlewski-book/wkmgr1.pdf
                    [texlive-lang-german]=/usr/share/doc/texlive-doc/generic/german/gerdoc.pdf
                    [openjdk-17-doc]="$javadoc/java.desktop/javax/swing/ButtonGroup.html $javadoc/java.base/java/time/temporal/ValueRange.html"
                    [ghc-doc]=/usr/share/doc/ghc-doc/html/libraries/ghc-prim-0.7.0/GHC-Types.html
                    [libgtk-4-doc]=/usr/share/doc/libgtk-4-doc/gtk4/vfunc.Widget.keynav_failed.html)
for pkg in "${!extract[@]}"; do
  paths=()
  for path in ${extract[$pkg]}; do
    [ -e "$cache/$pkg$path" ] || paths+=(".$path")
  done
  [ ${#paths[@]} -eq 0 ] && continue
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -qq "$pkg" 2>/dev/null); then
    [ "$(id -u)" -eq 0 ] && apt-get update -qq
    (cd "$tmp" && apt-get download -qq "$pkg" 2>/dev/null) || { echo "cannot download $pkg" >&2; rm -rf "$tmp"; exit 1; }
  fi
  mkdir -p "$cache/$pkg"
  dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$cache/$pkg" "${paths[@]}"
  rm -rf "$tmp"
done
