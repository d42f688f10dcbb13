"""Which hosts are rendered, decided per host by evidence (pure).

The rule of :mod:`.detect` judges each page on its static HTML; a host may still be
unlike what the rule expects (an app shell with a static header full of links, or a
page of little text that its script does not change). As Crawlee's adaptive crawler
does, some of each host's pages are seen both ways, and the host's mode follows what
that shows:

* **every rendered page** is a comparison, for free: the browser's fetch of the main
  document is the static HTML, and its DOM the rendered page;
* **a sample of the pages the host's mode leaves static** (and that load script: a page
  without any cannot change) is rendered as evidence: the first ``sample_first`` of
  each host, then those whose count is a power of ``sample_growth`` (4: the 4th, 16th,
  64th...): fewer as the rule keeps being right, and from the start again whenever it is
  wrong.

A :class:`Comparison` shows a **gain** when the rendered page has materially more main
text than the static HTML (its links are recorded too). A host's mode:

* ``rule`` (where each host starts): a page is rendered when the rule judges it dynamic;
* ``render``: ``switch_after`` pages in a row were judged dynamic, or ``switch_after``
  comparisons in a row gained (the host's pages need the browser, whether the rule sees it
  or not), so every page is rendered directly, without a static fetch first;
  ``switch_after`` renders in a row without a gain send it back (to ``static`` when the
  rule had judged them dynamic, else to ``rule``);
* ``static``: ``switch_after`` pages in a row that the rule judged dynamic gained nothing
  (the rule over-reaches here), so they are left static, and sampled; one sample with a
  gain sends the host back to ``rule``.

The evidence of at most ``max_hosts`` hosts, the ones met last, is kept: a broad crawl
meets hosts without end. A host let go keeps its mode (when not ``rule``) among the last
``4 * max_hosts`` so kept, and its evidence and sampling start again when it comes back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Comparison:
    """One page seen both ways: the links and the characters of main text (the page's content,
    navigation and layout left out) of the static HTML and of the rendered DOM."""

    static_links: int
    static_text: int
    rendered_links: int
    rendered_text: int

    def gain(self, min_more: int = 50) -> bool:
        """Whether rendering shows materially more content: ``min_more`` more characters of main
        text, and a quarter more. Links alone do not count: what script adds to a page of
        content is mostly navigation (a Doxygen nav tree adds 45-123 links to any page), and
        an application's links come with its text."""
        return self.rendered_text - self.static_text >= max(min_more, self.static_text / 4)


@dataclass
class HostEvidence:
    """A host's mode and the evidence it was decided on."""

    mode: str = "rule"
    comparisons: int = 0
    gains: int = 0
    missed: int = 0  # pages judged static that showed more when rendered
    overreached: int = 0  # pages judged dynamic that showed nothing more
    reason: str = ""  # why the mode was last set
    gains_in_row: int = 0
    plain_in_row: int = 0  # comparisons without a gain
    wasted_in_row: int = 0  # pages judged dynamic without a gain
    dynamic_in_row: int = 0  # static fetches judged dynamic
    unrendered: Counter = field(default_factory=Counter)  # judged dynamic? -> pages left static since a reset

    def row(self) -> dict:
        return {"mode": self.mode, "comparisons": self.comparisons, "gains": self.gains, "missed": self.missed,
                "overreached": self.overreached, "reason": self.reason}


class HostRenderEvidence:
    """Every host's :class:`HostEvidence`: the sampling and the switches (module docstring)."""

    def __init__(self, switch_after: int = 3, sample_first: int = 2, min_more: int = 50,
                 sample_growth: int = 4, max_hosts: int = 0) -> None:
        self.switch_after = max(1, switch_after)
        self.sample_first = sample_first
        self.sample_growth = max(2, sample_growth)
        self.min_more = min_more
        self.max_hosts = max_hosts  # 0: every host's evidence is kept
        self.hosts: dict[str, HostEvidence] = {}  # the host met last, last
        self.decided: dict[str, str] = {}  # hosts let go -> their mode, when not "rule"
        self.totals: Counter[str] = Counter()  # comparisons, gains, missed, overreached over all hosts

    def _host(self, host: str) -> HostEvidence:
        evidence = self.hosts.pop(host, None)
        if evidence is None:
            evidence = HostEvidence()
            mode = self.decided.pop(host, None)
            if mode is not None:
                evidence.mode, evidence.reason = mode, "kept when the host's evidence was let go"
        self.hosts[host] = evidence
        if self.max_hosts and len(self.hosts) > self.max_hosts:
            oldest = next(iter(self.hosts))
            let_go = self.hosts.pop(oldest)
            if let_go.mode != "rule":
                self.decided[oldest] = let_go.mode
                if len(self.decided) > 4 * self.max_hosts:
                    del self.decided[next(iter(self.decided))]
        return evidence

    def mode(self, host: str) -> str:
        evidence = self.hosts.get(host)
        return evidence.mode if evidence is not None else self.decided.get(host, "rule")

    def sample(self, host: str, judged_dynamic: bool) -> bool:
        """A page of ``host`` that its mode leaves static: render it as evidence? The first
        ``sample_first`` since the last reset, then each whose count is a power of ``sample_growth``."""
        evidence = self._host(host)
        evidence.unrendered[judged_dynamic] += 1
        seen = evidence.unrendered[judged_dynamic]
        if seen <= self.sample_first:
            return True
        while seen % self.sample_growth == 0:
            seen //= self.sample_growth
        return seen == 1

    def judged(self, host: str, dynamic: bool) -> str | None:
        """The rule judged one of the host's static fetches; return ``"render"`` when that makes
        ``switch_after`` dynamic ones in a row (the host is rendered directly from then on)."""
        e = self._host(host)
        e.dynamic_in_row = e.dynamic_in_row + 1 if dynamic else 0
        if e.mode == "rule" and e.dynamic_in_row >= self.switch_after:
            return self._switch(e, "render", f"{self.switch_after} pages in a row judged dynamic")
        return None

    def record(self, host: str, judged_dynamic: bool, comparison: Comparison) -> str | None:
        """Add one comparison, of a page the rule judged ``judged_dynamic``; return the host's
        new mode when it switches."""
        e = self._host(host)
        gain = comparison.gain(self.min_more)
        e.comparisons += 1
        e.gains += gain
        self.totals["comparisons"] += 1
        self.totals["gains"] += gain
        if gain != judged_dynamic:  # the rule was wrong here: sample from the start again
            wrong = "missed" if gain else "overreached"
            setattr(e, wrong, getattr(e, wrong) + 1)
            self.totals[wrong] += 1
            e.unrendered.clear()
        e.gains_in_row = e.gains_in_row + 1 if gain else 0
        e.plain_in_row = 0 if gain else e.plain_in_row + 1
        if judged_dynamic:
            e.wasted_in_row = 0 if gain else e.wasted_in_row + 1
        n = self.switch_after
        if e.mode == "rule" and e.gains_in_row >= n:
            return self._switch(e, "render", f"{n} pages in a row showed more when rendered")
        if e.mode == "rule" and e.wasted_in_row >= n:
            return self._switch(e, "static", f"{n} pages judged dynamic in a row showed nothing more when rendered")
        if e.mode == "render" and e.plain_in_row >= n:
            # Judged dynamic and still plain: the rule over-reaches here, and would send it straight back.
            return self._switch(e, "static" if e.wasted_in_row >= n else "rule",
                                f"{n} rendered pages in a row showed nothing more than their HTML")
        if e.mode == "static" and gain:
            return self._switch(e, "rule", "a sampled page showed more when rendered")
        return None

    @staticmethod
    def _switch(e: HostEvidence, mode: str, reason: str) -> str:
        e.mode, e.reason = mode, reason
        e.gains_in_row = e.plain_in_row = e.wasted_in_row = e.dynamic_in_row = 0
        return mode

    def modes(self) -> Counter:
        return Counter(e.mode for e in self.hosts.values()) + Counter(self.decided.values())
