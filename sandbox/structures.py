"""The sandbox's hostile-structures family: link structures and servers built to exhaust a
crawler's frontier or to hammer one server through it (pure: names and pages).

A host ``h<i>`` with ``structure=...`` serves one of these instead of a generated site:

* ``farm``: a subdomain link farm. Every page names ``structure_links`` new hosts
  ``s<random>.h<i>-farm.test``, all under one registered domain (``h<i>-farm.test``), pinned
  to :data:`FARM_ADDRESS`.
* ``shared_ip``: one server behind many names. The root page links to ``structure_links``
  names ``n<k>-h<i>-ip.test`` (each its own registered domain, as on shared hosting) and to the
  server's IP literal, all at :data:`SHARED_ADDRESS`; each name has two small pages.
* ``calendar``: a calendar whose every link carries a new random session segment
  (``/cal/(S(<random>))/d/<day>/``), every page reading the same.
* ``headers``: ``/endless`` sends header lines without end, ``/many`` 600 of them and a body.

:func:`host_resolve` gives the pins that send each family's names to its address.
"""

from __future__ import annotations

import os

FARM_ADDRESS = "127.0.0.4"
SHARED_ADDRESS = "127.0.0.3"
STRUCTURES = ("farm", "shared_ip", "calendar", "headers")
#: Where each family's names must resolve (the others stay on the sandbox's own address).
ADDRESSES = {"farm": FARM_ADDRESS, "shared_ip": SHARED_ADDRESS}


def farm_domain(i: int) -> str:
    return f"h{i}-farm.test"


def shared_name(i: int, k: int) -> str:
    return f"n{k}-h{i}-ip.test"


def host_resolve(structures: dict[int, str]) -> list[str]:
    """``HOST_RESOLVE`` pins for the families' names (put them before ``*.sandbox.test``)."""
    pins = []
    for i, structure in sorted(structures.items()):
        if structure == "farm":
            pins.append(f"*.{farm_domain(i)}={FARM_ADDRESS}")
        elif structure == "shared_ip":
            pins.append(f"*-h{i}-ip.test={SHARED_ADDRESS}")
    return pins


def _page(title: str, links: str, text: str = "") -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body><p>{text}</p>{links}</body></html>".encode()


def farm_page(i: int, port: int, links: int) -> bytes:
    """A farm page: ``links`` hosts of the farm never named before."""
    tail = f".{farm_domain(i)}:{port}/"
    names = (os.urandom(6).hex() for _ in range(links))
    return _page("farm", "".join(f'<a href="http://s{n}{tail}">{n}</a> ' for n in names), "A page of the farm.")


def shared_root(i: int, port: int, links: int) -> bytes:
    """The root of a shared-IP host: every name of the server, its IP literal, and the first
    name again as an alias with a trailing dot and capitals (one site, not two)."""
    anchors = "".join(f'<a href="http://{shared_name(i, k)}:{port}/">{k}</a> ' for k in range(links))
    alias = f'<a href="http://{shared_name(i, 0).upper()}.:{port}/">alias</a> '
    return _page("shared", f'<a href="http://{SHARED_ADDRESS}:{port}/">by address</a> ' + alias + anchors,
                 "Sites on one server.")


def shared_page(name: str, path: str) -> bytes:
    if path == "/":
        return _page(name, '<a href="/about.html">about</a>', f"The site {name}.")
    return _page(f"about {name}", '<a href="/">home</a>', f"About the site {name}, one of many on its server.")


def calendar_page(day: int) -> bytes:
    """Every day reads the same; the next day's link has a session segment never seen before."""
    return _page("Calendar", f'<a href="/cal/(S({os.urandom(6).hex()}))/d/{day + 1}/">next day</a>',
                 "Events this day: none.")


def header_lines(start: int, count: int) -> bytes:
    return b"".join(b"X-Filler-%d: %s\r\n" % (n, b"y" * 40) for n in range(start, start + count))
