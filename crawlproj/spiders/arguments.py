"""What a crawl is started with: seed lines, ``-a sitemap=``, and the spiders' own ``-a``
arguments, each refused in one line that names what is wrong (pure but for the spider class)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..errors import BadInput
from ..urls import InvalidURL, canonicalize


def read_seed_lines(lines: Iterable[bytes | str]) -> Iterator[tuple[int, str | None]]:
    """(line number, URL) of each seed line: one URL a line, '#' starts a comment. Lines read
    as bytes are UTF-8 (a byte-order mark allowed); a line that is not gives None, for the
    caller to report and skip: one bad line does not cost the whole list."""
    for number, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8-sig")
            except UnicodeDecodeError:
                yield number, None
                continue
        text = line.split("#", 1)[0].strip()
        if text:
            yield number, text


def sitemap_arg(value: str | None, session_params: tuple[str, ...] = (), max_length: int = 2048) -> list[str]:
    """``-a sitemap=URL[,URL...]`` as canonical URLs; BadInput names the first that is not one."""
    urls = []
    for raw in (part.strip() for part in str(value or "").split(",")):
        if not raw:
            continue
        try:
            urls.append(canonicalize(raw, session_params=session_params, max_length=max_length))
        except InvalidURL as exc:
            raise BadInput(f"-a sitemap={raw!r} is not a crawlable http(s) URL ({exc.reason})") from None
    return urls


def check_arguments(spidercls: type, given: Iterable[str]) -> None:
    """Refuse an ``-a`` argument crawlproj's own spider does not take (``-a seed=`` used to be
    ignored, and the crawl fell back to the default seeds), naming the closest one it does. A
    project's spider built on these takes what arguments it likes (Scrapy's way: attributes)."""
    import difflib

    if not spidercls.__module__.startswith("crawlproj."):
        return
    known = sorted(set(spidercls.ARGUMENTS) - {"_job"})
    for name in given:
        if name not in spidercls.ARGUMENTS:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"did you mean -a {close[0]}=?" if close else "its arguments: " + ", ".join(known)
            raise BadInput(f"-a {name}= is not an argument of the {spidercls.name} spider; {hint}")
