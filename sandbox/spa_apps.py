"""Real single-page applications from npm packages, for tests and benchmarks on real apps.

Each app is a published npm package's own bundle, fetched from the npm registry at a pinned
version (checked against the registry's sha512) into a cache, and served by nginx on
loopback as its own virtual host (:class:`~.servers.NginxServer`), on the page a site
would deploy it on. The documents they show are real too (ReadMe's ``oas-examples``
OpenAPI documents, docsify's own README):

* ``swagger.apps.test``: Swagger UI (``swagger-ui-dist``), mounted into ``#swagger-ui``;
* ``redoc.apps.test``: Redoc's standalone bundle (an ES module), a ``<redoc>`` custom element;
* ``docsify.apps.test``: docsify, rendering Markdown client-side into ``#app``;
* ``rapidoc.apps.test``: RapiDoc (``rapidoc``), a web component whose reference lives in shadow roots;
* ``elements.apps.test``: Stoplight Elements (``@stoplight/elements``), the ``<elements-api>`` web component.

None of their static HTML has text or links to speak of: what a crawler stores of them is
whatever it renders.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REGISTRY = "https://registry.npmjs.org"
DOMAIN = "apps.test"
HOST_RESOLVE = f"*.{DOMAIN}=127.0.0.1"


@dataclass(frozen=True)
class Package:
    """An npm package at a pinned version, and the registry's integrity string for its tarball."""

    name: str
    version: str
    integrity: str

    @property
    def tarball(self) -> str:
        return f"{REGISTRY}/{self.name}/-/{self.name.rsplit('/', 1)[-1]}-{self.version}.tgz"


SWAGGER_UI = Package("swagger-ui-dist", "5.35.0", "sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4Ym"
                                                  "Xkn/h0wCDNsXdGarTNNHC3sU8yVUQ==")
REDOC = Package("redoc", "3.0.1", "sha512-KDfoKaYW19LCl4YStgBnwlaNjYEFfs5zCNt1s1WZ2YM5u8d26Yuzd2l43fZO851ZsgIMe/D640fD"
                                  "JkD8eaRQKQ==")
DOCSIFY = Package("docsify", "5.0.0", "sha512-F2LBvsG/RkW9VZs91FPceZpJBilSC9EYCid0n1YhnQb3OOw63dk70d1ITPR2RPwxmPPcWFQ+"
                                      "TOtpdImilLWyGw==")
RAPIDOC = Package("rapidoc", "9.3.8", "sha512-eCYEbr1Xr8OJZvVCw8SXl9zBCRoLJbhNGuG5IZTHq/RWAOq/O4MafUCuFEyZHsrhLrlUcGZMa"
                                      "64pyhpib8fQKQ==")
STOPLIGHT_ELEMENTS = Package("@stoplight/elements", "9.0.25", "sha512-rDbNsgSCNo74lyV57cBzym+8F68/R2j7UPq4r3w5qK608vX8A"
                                                            "PNJhTq+2MkbTjsM3bUhFIoRdI225tlI85KpCA==")
OAS_EXAMPLES = Package("@readme/oas-examples", "8.2.2", "sha512-uytlvlylq3zpemG0h1R7ijlMBCajqXU0VpMI1Iw+j92s77Y/oT6pBf"
                                                        "3BZN0lYl0WIGTh7POM4Jdu7L14eCzwXQ==")


def cache_dir() -> Path:
    return Path(os.environ.get("CRAWLPROJ_CACHE") or Path.home() / ".cache" / "crawlproj") / "npm"


def fetch(package: Package) -> Path:
    """The package's unpacked ``package/`` directory, downloaded once into :func:`cache_dir`."""
    root = cache_dir() / f"{package.name.replace('/', '+')}-{package.version}"
    if (root / "package" / "package.json").exists():
        return root / "package"
    with urllib.request.urlopen(package.tarball, timeout=120) as response:
        data = response.read()
    algorithm, expected = package.integrity.split("-", 1)
    if base64.b64encode(hashlib.new(algorithm, data).digest()).decode() != expected:
        raise RuntimeError(f"{package.tarball}: its {algorithm} does not match the pinned integrity")
    partial = root.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(partial, filter="data")
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    return root / "package"


def build_sites(out: Path, apis: int = 0) -> dict[str, str]:
    """Lay the apps out under ``out``; return {virtual host: its root} for :class:`NginxServer`.

    With ``apis``, Swagger UI and Redoc also get a page for each of the first ``apis``
    OpenAPI documents (``/apis/<name>.html``: :func:`api_pages`), as an API portal has."""
    specs = fetch(OAS_EXAMPLES) / "3.0" / "json"
    names = sorted(p.stem for p in specs.glob("*.json"))[:apis]
    sites = {}

    swagger = out / "swagger"
    shutil.copytree(fetch(SWAGGER_UI), swagger, dirs_exist_ok=True)
    shutil.copy(specs / "petstore.json", swagger / "openapi.json")
    # The one file a deployment changes: which document the UI shows.
    initializer = (swagger / "swagger-initializer.js").read_text()
    (swagger / "swagger-initializer.js").write_text(
        initializer.replace("https://petstore.swagger.io/v2/swagger.json", "/openapi.json"))
    sites[f"swagger.{DOMAIN}"] = str(swagger)
    for name in names:
        _api_page(swagger, name, specs, '<div id="swagger-ui"></div><script src="/swagger-ui-bundle.js"></script>'
                  '<script src="/swagger-ui-standalone-preset.js"></script><script>window.onload = () => {'
                  f'window.ui = SwaggerUIBundle({{url: "/apis/{name}.json", dom_id: "#swagger-ui", presets: '
                  '[SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: "StandaloneLayout"});};</script>')

    redoc = out / "redoc"
    redoc.mkdir(parents=True, exist_ok=True)
    shutil.copy(fetch(REDOC) / "bundles" / "redoc.standalone.js", redoc / "redoc.standalone.js")
    shutil.copy(specs / "response-examples.json", redoc / "openapi.json")
    (redoc / "index.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>API reference</title></head><body>'
        '<redoc spec-url="/openapi.json"></redoc><script type="module" src="/redoc.standalone.js"></script></body></html>')
    sites[f"redoc.{DOMAIN}"] = str(redoc)
    for name in names:
        _api_page(redoc, name, specs, f'<redoc spec-url="/apis/{name}.json"></redoc>'
                                      '<script type="module" src="/redoc.standalone.js"></script>')

    package = fetch(DOCSIFY)
    sites[f"docsify.{DOMAIN}"] = _app(out / "docsify", {package / "dist" / "docsify.min.js": "docsify.min.js",
                                                        package / "README.md": "README.md"}, "docsify", "",
                                      '<div id="app">Loading...</div><script>window.$docsify = {name: "docsify"};</script>'
                                      '<script src="/docsify.min.js"></script>')
    # Web components: RapiDoc draws the whole reference inside shadow roots (LitElement).
    sites[f"rapidoc.{DOMAIN}"] = _app(out / "rapidoc", {fetch(RAPIDOC) / "dist" / "rapidoc-min.js": "rapidoc-min.js",
                                                        specs / "petstore.json": "openapi.json"}, "API reference",
                                      '<script type="module" src="/rapidoc-min.js"></script>',
                                      '<rapi-doc spec-url="/openapi.json" render-style="read"></rapi-doc>')
    package = fetch(STOPLIGHT_ELEMENTS)
    sites[f"elements.{DOMAIN}"] = _app(out / "elements", {package / "web-components.min.js": "web-components.min.js",
                                                          package / "styles.min.css": "styles.min.css",
                                                          specs / "petstore.json": "openapi.json"}, "API reference",
                                       '<script src="/web-components.min.js"></script>'
                                       '<link rel="stylesheet" href="/styles.min.css">',
                                       '<elements-api apiDescriptionUrl="/openapi.json" router="hash" layout="stacked">'
                                       '</elements-api>')
    return sites


def _app(root: Path, files: dict[Path, str], title: str, head: str, body: str) -> str:
    """An app's site: its ``files`` (source -> name) and an ``index.html``; returns its root."""
    root.mkdir(parents=True, exist_ok=True)
    for source, name in files.items():
        shutil.copy(source, root / name)
    (root / "index.html").write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>{head}'
                                     f"</head><body>{body}</body></html>")
    return str(root)


def _api_page(root: Path, name: str, specs: Path, body: str) -> None:
    (root / "apis").mkdir(exist_ok=True)
    shutil.copy(specs / f"{name}.json", root / "apis" / f"{name}.json")
    (root / "apis" / f"{name}.html").write_text(
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{name}</title></head><body>{body}</body></html>')


def api_pages(sites: dict[str, str]) -> list[tuple[str, str]]:
    """(host, path) of every app page laid out by :func:`build_sites`."""
    pages = []
    for host, root in sites.items():
        pages.append((host, "/"))
        pages += [(host, f"/apis/{p.name}") for p in sorted(Path(root, "apis").glob("*.html"))]
    return pages
