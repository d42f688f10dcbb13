"""Queued URLs in Redis, lean: a link's request in a few bytes beside its URL (pure).

A queued request was a pickled ``Request.to_dict()``: 334 bytes of Redis memory a URL, 334 GB
for a billion queued URLs. Almost every queued request is a link the spider made: a GET of the
spider's ``parse`` with its default errback, no body, cookies or flags, and a few small numbers
in its meta (hops from the seed, CGI hops, OPIC's share, a topic score). Those are packed as

    b"L" URL-or-path (0x1f CODE VALUE)*

where a URL whose host is the queue's own politeness key (the default ``FRONTIER_KEY``) keeps
only its path (``/docs/a.html``; ``s/docs/a.html`` for https; the key gives back the rest), and
each meta value is one code letter and its shortest text. Anything else (a render sample, a
revisit with its validators, another callback, a header) keeps the long form, ``b"P"`` and its
pickle. :func:`pack` and :func:`unpack` are exact inverses on the entries they take.
"""

from __future__ import annotations

import pickle
from typing import Any

SEP = "\x1f"
#: Meta keys a lean entry carries, by code letter, and how each value reads back.
META = {"d": ("depth", int), "c": ("cgi_hops", int), "o": ("opic_share", float), "t": ("topic_score", float),
        "i": ("irrelevant_hops", int), "b": ("backlinks", int), "k": ("opic_cash", float),
        "h": ("frontier_handed", bool), "r": ("retry_times", int),
        "w": ("backlink_weight", int)}
CODES = {name: (code, kind) for code, (name, kind) in META.items()}
#: What the default link request has, and a lean entry leaves out.
DEFAULTS = {"callback": "parse", "errback": "on_error", "headers": {}, "body": b"", "cookies": {},
            "encoding": "utf-8", "flags": [], "cb_kwargs": {}, "method": "GET"}


def _value(kind: type, value: Any) -> str | None:
    """``value`` as its shortest text, or None when it is not of ``kind`` (then the long form)."""
    if kind is bool:
        return "1" if value is True else None
    if type(value) is not kind and not (kind is float and type(value) is int):
        return None
    text = repr(float(value)) if kind is float else str(value)
    return None if SEP in text else text


def lean(entry: dict, key: str) -> bytes | None:
    """The lean form of ``entry`` queued under politeness key ``key``, or None (the long form)."""
    for name, default in DEFAULTS.items():
        if entry.get(name, default) != default:
            return None
    if entry.get("_class"):
        return None
    url = entry["url"]
    if SEP in url or "\n" in url:
        return None
    for scheme, mark in (("http://", ""), ("https://", "s")):
        if url.startswith(scheme + key + "/"):
            url = mark + url[len(scheme) + len(key):]
            break
    parts = ["L" + url]
    if entry.get("dont_filter"):
        parts.append("F")
    if entry.get("priority"):
        if type(entry["priority"]) is not int:
            return None
        parts.append(f"p{entry['priority']}")
    for name, value in (entry.get("meta") or {}).items():
        code = CODES.get(name)
        text = _value(code[1], value) if code else None
        if text is None:
            return None
        parts.append(code[0] + text)
    return SEP.join(parts).encode("utf-8")


def pack(entry: dict, key: str) -> bytes:
    """``entry`` as bytes for a Redis queue: lean when it can be, else its pickle."""
    packed = lean(entry, key)
    return packed if packed is not None else b"P" + pickle.dumps(entry, protocol=5)


def unpack(data: bytes, key: str) -> dict:
    """The entry :func:`pack` packed under ``key``."""
    if data[:1] == b"P":
        return pickle.loads(data[1:])
    if data[:1] != b"L":
        raise ValueError(f"not a packed entry: {data[:16]!r}")
    url, *fields = data[1:].decode("utf-8").split(SEP)
    if url.startswith("/"):
        url = f"http://{key}{url}"
    elif url.startswith("s/"):
        url = f"https://{key}{url[1:]}"
    entry: dict[str, Any] = {"url": url, **{k: (v.copy() if isinstance(v, (dict, list)) else v)
                                            for k, v in DEFAULTS.items()},
                             "meta": {}, "dont_filter": False, "priority": 0}
    for field in fields:
        code, text = field[:1], field[1:]
        if code == "F":
            entry["dont_filter"] = True
        elif code == "p":
            entry["priority"] = int(text)
        else:
            name, kind = META[code]
            entry["meta"][name] = True if kind is bool else kind(text)
    return entry
