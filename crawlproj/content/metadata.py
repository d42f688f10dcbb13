"""What a page states about itself: title, description, language, canonical URL, author and
dates, from ``<meta>``, Open Graph, JSON-LD (schema.org), microdata and ``<time>`` (pure logic).

Each field takes the first source that gives a usable value, the most deliberate first:
JSON-LD and Open Graph (written for machines), then the plain ``<meta>`` names news sites and
Dublin Core use, then the markup itself. Dates come out as ISO 8601 (a date, or a date and
time with its offset when the page gives one); a value that is not a date is left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser

from .language import declared_language

#: schema.org types whose properties describe the page's own content.
ARTICLE_TYPES = frozenset({
    "Article", "NewsArticle", "BlogPosting", "Blog", "TechArticle", "ScholarlyArticle", "Report", "AnalysisNewsArticle",
    "OpinionNewsArticle", "ReportageNewsArticle", "ReviewNewsArticle", "BackgroundNewsArticle", "LiveBlogPosting",
    "SocialMediaPosting", "DiscussionForumPosting", "WebPage", "ItemPage", "AboutPage", "FAQPage", "QAPage",
    "Recipe", "Review", "HowTo", "MedicalWebPage", "CreativeWork", "VideoObject", "Product", "Event"})
PUBLISHED_NAMES = ("article:published_time", "og:published_time", "datepublished", "date", "pubdate", "publishdate",
                   "publish-date", "publish_date", "dc.date", "dc.date.issued", "dcterms.issued", "dcterms.created",
                   "dcterms.date", "citation_publication_date", "citation_date", "sailthru.date", "parsely-pub-date",
                   "article.published", "originalpublicationdate", "displaydate", "creation_date", "created")
MODIFIED_NAMES = ("article:modified_time", "og:updated_time", "datemodified", "last-modified", "dcterms.modified",
                  "dc.date.modified", "article.updated", "lastmod", "revised", "modified")
AUTHOR_NAMES = ("author", "article:author", "byl", "sailthru.author", "parsely-author", "dc.creator",
                "dcterms.creator", "citation_author", "twitter:creator")
_DATE_ONLY = re.compile(r"^(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})$")
_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})(?:T?(\d{2})(\d{2})(\d{2})?)?(Z|[+-]\d{2}:?\d{2})?$")
_BY = re.compile(r"^\s*(?:by|von|par|por|di)\s+", re.I)
#: JSON-LD blocks longer than this are not read (a page can embed megabytes of state there).
MAX_JSON_LD = 500_000


@dataclass(frozen=True)
class Metadata:
    title: str | None = None
    description: str | None = None
    language: str | None = None
    canonical_url: str | None = None
    author: str | None = None
    published: str | None = None
    modified: str | None = None


def iso_date(value: object) -> str | None:
    """``value`` as an ISO 8601 date or date-time, or None when it is not one."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > 64:
        return None
    m = _DATE_ONLY.match(value)
    if m:
        try:
            day = datetime(int(m[1]), int(m[2]), int(m[3]))
        except ValueError:
            return None
        return day.date().isoformat() if 1900 <= day.year <= 2200 else None
    m = _COMPACT.match(value)
    if m and len(value) >= 8:
        zone = m[7] or ""
        text = f"{m[1]}-{m[2]}-{m[3]}" + (f"T{m[4]}:{m[5]}:{m[6] or '00'}" if m[4] else "") + zone
        value = text
    try:
        parsed = datetime.fromisoformat(value.replace(" ", "T", 1) if "T" not in value and " " in value else value)
    except ValueError:
        try:
            parsed = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
    if not 1900 <= parsed.year <= 2200:
        return None
    if "T" not in value and ":" not in value:
        return parsed.date().isoformat()
    return parsed.isoformat()


def _clean(value: object) -> str | None:
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, str) and v.strip()), None)
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text or None


#: What the metadata always reads, in one query.
_ALWAYS_READ = ('meta[content], script[type="application/ld+json"], title, h1, link[rel~="canonical" i][href], '
                '[itemprop="datePublished"], [itemprop="dateModified"]')
_DATED = frozenset({"datePublished", "dateModified"})


def _json_ld(scripts: list) -> dict:
    """The page's own schema.org object from its JSON-LD scripts (an Article's before a
    WebPage's), or {}."""
    found: list[dict] = []
    for node in scripts:
        raw = node.text(deep=True)
        if not raw or len(raw) > MAX_JSON_LD:
            continue
        try:
            data = json.loads(raw, strict=False)
        except ValueError:
            continue
        stack = [data]
        while stack and len(found) < 50:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(reversed(item))
            elif isinstance(item, dict):
                if "@graph" in item:
                    stack.append(item["@graph"])
                kinds = item.get("@type")
                kinds = {kinds} if isinstance(kinds, str) else set(kinds) if isinstance(kinds, list) else set()
                if kinds & ARTICLE_TYPES:
                    found.append(item)
                main = item.get("mainEntity") or item.get("mainEntityOfPage")
                if isinstance(main, (dict, list)):
                    stack.append(main)
    articles = [o for o in found if not {o.get("@type")} & {"WebPage", "ItemPage", "AboutPage"}]
    return (articles or found or [{}])[0]


def _person(value: object) -> str | None:
    """A schema.org author: a name, a Person, or a list of them (names joined)."""
    if isinstance(value, list):
        names = [n for n in (_person(v) for v in value[:10]) if n]
        return ", ".join(dict.fromkeys(names)) or None
    if isinstance(value, dict):
        return _clean(value.get("name"))
    name = _clean(value)
    return None if name is None or name.startswith(("http://", "https://")) else name


def read_metadata(tree: LexborHTMLParser, page_url: str | None = None) -> Metadata:
    """The page's metadata, read from its tree (before scripts are stripped: JSON-LD is a script)."""
    metas: dict[str, str] = {}
    scripts: list = []
    title_node = h1 = canonical_node = None
    dated_nodes: dict[str, list] = {"datePublished": [], "dateModified": []}
    # One query for all it reads (each query walks the whole tree).
    for node in tree.css(_ALWAYS_READ):
        tag = node.tag
        if tag == "meta":
            attrs = node.attributes
            name = (attrs.get("property") or attrs.get("name") or attrs.get("itemprop") or attrs.get("http-equiv")
                    or "").strip().lower()
            content = attrs.get("content")
            if name and content and content.strip() and name not in metas:
                metas[name] = content
            if attrs.get("itemprop") in _DATED:
                dated_nodes[attrs["itemprop"]].append(node)
        elif tag not in ("script", "title", "h1", "link"):
            prop = node.attributes.get("itemprop")
            if prop in _DATED:
                dated_nodes[prop].append(node)
        elif tag == "script":
            scripts.append(node)
        elif tag == "title":
            title_node = title_node or node
        elif tag == "h1":
            h1 = h1 or node
        elif tag == "link":
            canonical_node = canonical_node or node
    ld = _json_ld(scripts)

    def meta(*names: str) -> str | None:
        return next((v for v in (_clean(metas.get(n)) for n in names) if v), None)

    def dated(ld_key: str, names: tuple[str, ...], itemprop: str) -> str | None:
        for value in (ld.get(ld_key), *(metas.get(n) for n in names)):
            found = iso_date(value if not isinstance(value, list) else (value or [None])[0])
            if found:
                return found
        for node in dated_nodes[itemprop]:
            found = iso_date(node.attributes.get("datetime") or node.attributes.get("content") or node.text())
            if found:
                return found
        return None

    title = (_clean(ld.get("headline")) or meta("og:title", "twitter:title")
             or (_clean(title_node.text()) if title_node is not None else None)
             or (_clean(h1.text()) if h1 is not None else None))
    description = meta("description", "og:description", "twitter:description", "dc.description") or _clean(
        ld.get("description"))
    root = tree.root
    html_lang = (root.attributes.get("lang") or root.attributes.get("xml:lang")) if root is not None else None
    locale = meta("og:locale") or _clean(ld.get("inLanguage") if isinstance(ld.get("inLanguage"), str) else None)
    language = declared_language(html_lang, meta("content-language", "language", "dc.language"), None) or (
        declared_language(locale.replace("_", "-"), None, None) if locale else None)
    canonical = _clean(canonical_node.attributes.get("href")) if canonical_node is not None else None
    canonical = canonical or meta("og:url")
    if canonical and page_url:
        try:
            canonical = urljoin(page_url, canonical)
        except ValueError:
            canonical = None
    if canonical and not canonical.startswith(("http://", "https://")):
        canonical = None
    author = _person(ld.get("author")) or _person(ld.get("creator"))
    if not author:
        for name in AUTHOR_NAMES:
            value = _clean(metas.get(name))
            if value and not value.startswith(("http://", "https://", "@")):
                author = _BY.sub("", value)
                break
    if not author:
        node = tree.css_first('[itemprop="author"] [itemprop="name"], [itemprop="author"], [rel="author"]')
        if node is not None:
            value = _clean(node.attributes.get("content") or node.text())
            author = _BY.sub("", value) if value and len(value) <= 100 else None
    published = dated("datePublished", PUBLISHED_NAMES, "datePublished")
    if not published:
        node = tree.css_first("time[pubdate][datetime], article time[datetime], time[datetime]")
        published = iso_date(node.attributes.get("datetime")) if node is not None else None
    modified = dated("dateModified", MODIFIED_NAMES, "dateModified")
    return Metadata(title=title, description=description, language=language, canonical_url=canonical,
                    author=author, published=published, modified=modified)
