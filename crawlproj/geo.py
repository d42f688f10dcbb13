"""Where a server is, offline: IP address -> country, and a world map to put it on.

Two PyPI packages ship the data, so nothing is downloaded at run time:
``geoip2fast`` (an IP-to-country table derived from MaxMind GeoLite2 and
bundled in the wheel) and ``countryinfo`` (each country's name, centre and
outline). Loopback, private and link-local addresses are "local"; an address
the table does not know (or no address at all) is "unknown".

Both tables load lazily, once per process: the dashboard and the report pay
for them only when a public address turns up or a map is drawn.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from dataclasses import dataclass
from importlib import resources

LOCAL, UNKNOWN = "local", "unknown"


@dataclass(frozen=True)
class ServerLocation:
    """A server's place: ``label`` is an ISO country code, "local" or "unknown"."""

    label: str
    country: str = ""  # the country's English name, when known
    lat: float | None = None
    lon: float | None = None


@functools.cache
def _ip_table():  # noqa: ANN202 - geoip2fast.GeoIP2Fast
    from geoip2fast import GeoIP2Fast

    return GeoIP2Fast(verbose=False)


@functools.cache
def countries() -> dict[str, dict]:
    """ISO alpha-2 code -> {"name", "lat", "lon", "outline"} (outline: a list of rings of (lon, lat))."""
    out: dict[str, dict] = {}
    for path in (resources.files("countryinfo") / "data").iterdir():
        if not path.name.endswith(".json"):
            continue
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        code = (info.get("ISO") or {}).get("alpha2")
        latlng = info.get("latlng") or info.get("capital_latlng")
        if not code or not latlng or len(latlng) != 2:
            continue
        rings = []
        for feature in (info.get("geoJSON") or {}).get("features", []):
            geometry = feature.get("geometry") or {}
            polygons = geometry.get("coordinates") or []
            if geometry.get("type") == "Polygon":
                polygons = [polygons]
            rings.extend(polygon[0] for polygon in polygons if polygon)  # outer rings only
        out[code.upper()] = {"name": info.get("name", code), "lat": float(latlng[0]), "lon": float(latlng[1]),
                             "outline": rings}
    return out


def locate(ip: str | None) -> ServerLocation:
    """The location of server address ``ip`` (IPv4 or IPv6)."""
    if not ip:
        return ServerLocation(UNKNOWN)
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return ServerLocation(UNKNOWN)
    if address.is_loopback or address.is_private or address.is_link_local:
        return ServerLocation(LOCAL)
    if address.is_multicast or address.is_reserved or address.is_unspecified:
        return ServerLocation(UNKNOWN)
    try:
        code = (_ip_table().lookup(str(address)).country_code or "").upper()
    except Exception:  # noqa: BLE001 - a table that cannot answer means "unknown", never a crash
        return ServerLocation(UNKNOWN)
    info = countries().get(code)
    if len(code) != 2 or not code.isalpha():  # geoip2fast's error codes ("--", "<invalid>", ...)
        return ServerLocation(UNKNOWN)
    if info is None:
        return ServerLocation(code)
    return ServerLocation(code, info["name"], info["lat"], info["lon"])


def project(lon: float, lat: float, width: float = 1000.0) -> tuple[float, float]:
    """Equirectangular projection onto a ``width`` x ``width / 2`` canvas (y grows southwards)."""
    return (lon + 180.0) / 360.0 * width, (90.0 - lat) / 180.0 * width / 2


@functools.cache
def world_svg_paths(width: float = 1000.0) -> str:
    """The countries' outlines as SVG ``<path>`` elements on a ``width`` x ``width/2`` canvas.

    Points closer than a pixel to the previous one are dropped, which keeps the
    whole world to roughly 100 kB.
    """
    parts = []
    for code, info in sorted(countries().items()):
        d = []
        for ring in info["outline"]:
            last = None
            points = []
            for lon, lat, *_ in ring:
                x, y = project(lon, lat, width)
                if last is None or abs(x - last[0]) + abs(y - last[1]) >= 1.0:
                    points.append(f"{x:.1f} {y:.1f}")
                    last = (x, y)
            if len(points) >= 3:
                d.append("M" + "L".join(points) + "Z")
        if d:
            parts.append(f'<path data-country="{code}" d="{"".join(d)}"/>')
    return "".join(parts)


def world_map_svg(counts: dict[str, int], width: float = 1000.0, element_id: str = "") -> str:
    """A self-contained SVG world map: a dot per country sized by ``counts`` (label -> count),
    in its ``g.servers`` group (where the dashboard's script draws them live).

    "local" and "unknown" have no place on the map; they are listed in its corner.
    """
    dots, aside = [], []
    biggest = max(counts.values(), default=1) or 1
    for label, count in sorted(counts.items(), key=lambda kv: -kv[1]):
        info = countries().get(label)
        if info is None:
            aside.append(f"{label}: {count}")
            continue
        x, y = project(info["lon"], info["lat"], width)
        radius = 3 + 12 * (count / biggest) ** 0.5
        dots.append(f'<circle class="server" data-location="{label}" cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}">'
                    f"<title>{info['name']}: {count}</title></circle>")
    text = "".join(f'<text x="8" y="{20 + 18 * i}">{line}</text>' for i, line in enumerate(aside))
    id_attr = f' id="{element_id}"' if element_id else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {width / 2:.0f}" class="world"{id_attr}>'
            f'<rect width="100%" height="100%" fill="#eef3f8"/>'
            f'<g fill="#d5dbe0" stroke="#fff" stroke-width="0.4">{world_svg_paths(width)}</g>'
            f'<g class="servers" fill="#d9480f" fill-opacity="0.7">{"".join(dots)}</g>'
            f'<g font-family="sans-serif" font-size="14" fill="#333">{text}</g></svg>')
