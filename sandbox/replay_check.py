"""Replay checked against the live page, as Browsertrix's QA does: one page loaded live and from
the archive (pywb) in Chromium at one viewport, then its requests, screenshots and text compared.

* **Resources present**: each request the live page made that succeeded (the page itself, its
  stylesheets, scripts, images, fonts...) is looked for among the replay's successful requests,
  by original URL (pywb's ``/coll/<timestamp><modifier>/<url>`` read back to ``<url>``).
* **Screenshot similarity**: SSIM (Wang et al. 2004) of the two viewport screenshots in grey
  levels, over 7x7 windows (scikit-image's defaults), the windows' mean: 1.0 is identical. SSIM
  rather than a pixel count: a one-pixel shift of anti-aliased text costs a pixel measure much
  and SSIM little, while a missing stylesheet (layout, colours, fonts) costs SSIM much.
* **Text match**: the visible text (``innerText``) of both, as multisets of words: the words in
  common over the larger count (1.0: the same words as often).

Replay is pywb's framed mode, as an archivist sees it (the page in ``mp_`` mode, in a frame under
pywb's banner): the window is made as much larger as the banner takes, so that the frame is the
live page's viewport, and the frame alone is compared. (Unframed, the ``mp_`` page sends itself
to the framed URL: pywb's default.)
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from io import BytesIO
from urllib.parse import urlsplit, urlunsplit

import numpy as np

#: pywb's replay URL: ``<collection>/<14 digits or fewer><modifier_>/<original URL>``.
_PYWB = re.compile(r"^https?://[^/]+/[^/]+/\d*(?:[a-z]{2}_)?/(https?:/?/?.*)$")
VIEWPORT = {"width": 1280, "height": 900}
#: Chromium resolves the documentation sites to loopback and nothing else: no request leaves the machine.
HOST_RULES = "MAP *.docs.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def original_url(replay_url: str) -> str | None:
    """The archived URL a pywb replay request asks for; None for pywb's own files."""
    found = _PYWB.match(replay_url)
    if not found:
        return None
    url = re.sub(r"^(https?):/+", r"\1://", found.group(1))
    return normalise(url)


def normalise(url: str) -> str:
    """A URL without its fragment, host in lower case, query as written."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.lower(), parts.path or "/", parts.query, ""))


def ssim(a: np.ndarray, b: np.ndarray, window: int = 7) -> float:
    """Mean structural similarity of two grey images (0..255, the same shape)."""
    from scipy.ndimage import uniform_filter

    a, b = a.astype(np.float64), b.astype(np.float64)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    n = window * window
    cov = n / (n - 1)  # sample covariance, as scikit-image
    mu_a, mu_b = uniform_filter(a, window), uniform_filter(b, window)
    va = cov * (uniform_filter(a * a, window) - mu_a * mu_a)
    vb = cov * (uniform_filter(b * b, window) - mu_b * mu_b)
    vab = cov * (uniform_filter(a * b, window) - mu_a * mu_b)
    s = ((2 * mu_a * mu_b + c1) * (2 * vab + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (va + vb + c2))
    pad = (window - 1) // 2  # the border windows are partial: left out, as scikit-image does
    return float(s[pad:-pad, pad:-pad].mean())


def grey(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(BytesIO(png)).convert("L"))


def text_match(live: str, replay: str) -> float:
    """Words in common (as multisets) over the larger count; 1.0 when both are empty."""
    a, b = Counter(live.split()), Counter(replay.split())
    total = max(sum(a.values()), sum(b.values()))
    return 1.0 if total == 0 else sum((a & b).values()) / total


def side_by_side(live_png: bytes, replay_png: bytes, path: str, width: int = 640) -> None:
    """The two screenshots, live on the left, replay on the right, scaled to ``width`` each."""
    from PIL import Image

    images = [Image.open(BytesIO(p)).convert("RGB") for p in (live_png, replay_png)]
    scaled = [im.resize((width, round(im.height * width / im.width))) for im in images]
    out = Image.new("RGB", (2 * width + 8, max(im.height for im in scaled)), "white")
    out.paste(scaled[0], (0, 0))
    out.paste(scaled[1], (width + 8, 0))
    out.save(path, optimize=True)


@dataclass
class Load:
    """One page load: the URLs that answered (status < 400), the screenshot, the visible text."""

    ok: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    png: bytes = b""
    text: str = ""


def load(context, url: str, replay: bool, settle_ms: int = 500, timeout_ms: int = 60000) -> Load:  # noqa: ANN001
    """Load ``url`` in a new page of ``context``; replay requests are read back to their originals."""
    out = Load()
    page = context.new_page()

    def seen(url: str, ok: bool) -> None:
        if url.startswith(("data:", "blob:")):
            return
        target = original_url(url) if replay else normalise(url)
        if target is not None:
            (out.ok if ok else out.failed).add(target)

    page.on("response", lambda response: seen(response.url, response.status < 400))
    page.on("requestfailed", lambda request: seen(request.url, False))
    try:
        page.goto(url, wait_until="networkidle", timeout=timeout_ms)
    except Exception:  # noqa: BLE001 - a page that never settles is still compared as it stands
        pass
    frame, element = page.main_frame, None
    if replay:  # pywb's replay frame, made the live page's viewport: the window grows by the banner
        element = page.wait_for_selector("iframe", timeout=timeout_ms)
        box = element.bounding_box()
        size = page.viewport_size
        page.set_viewport_size({"width": size["width"] + round(size["width"] - box["width"]),
                                "height": size["height"] + round(size["height"] - box["height"])})
        frame = element.content_frame()
        try:
            frame.wait_for_load_state("networkidle", timeout=timeout_ms)
        except Exception:  # noqa: BLE001
            pass
    frame.evaluate("document.fonts ? document.fonts.ready.then(() => true) : true")
    page.wait_for_timeout(settle_ms)
    out.png = element.screenshot() if element is not None else page.screenshot()
    out.text = frame.evaluate("document.body ? document.body.innerText : ''")
    page.close()
    return out


@dataclass(frozen=True)
class Comparison:
    url: str
    resources: int  # requests the live page made that succeeded
    missing: tuple[str, ...]  # of those, the ones replay did not answer
    similarity: float  # SSIM of the screenshots
    text: float  # text_match


def compare(live: Load, replay: Load, url: str) -> Comparison:
    missing = tuple(sorted(u for u in live.ok if u not in replay.ok))
    return Comparison(url, len(live.ok), missing, ssim(grey(live.png), grey(replay.png)),
                      text_match(live.text, replay.text))
