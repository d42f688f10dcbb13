"""The dashboard page: one HTML file, no external assets (it must work with no internet).

Plain JavaScript draws everything: the pages/s chart on a canvas (filling its panel, with a time axis), the tables, and
the servers as dots on the inline SVG world map of :func:`crawlproj.geo.world_map_svg`
(equirectangular, the projection of :func:`crawlproj.geo.project`). The page follows
``/events`` (Server-Sent Events); the browser reconnects by itself if the stream drops.
"""

from __future__ import annotations

import html
import json

from ..geo import countries, world_map_svg

_STYLE = """
body{font-family:system-ui,sans-serif;margin:0;background:#f6f7f9;color:#222}
header{background:#1f3a5f;color:#fff;padding:.6em 1em;display:flex;gap:1.5em;align-items:center;flex-wrap:wrap}
header b{font-size:1.2em} .badge{background:#fff3;border-radius:3px;padding:1px 6px}
main{display:grid;grid-template-columns:repeat(auto-fit,minmax(22em,1fr));gap:.8em;padding:.8em}
section{background:#fff;border:1px solid #dde;border-radius:4px;padding:.5em .8em}
section.wide{grid-column:1/-1} h2{font-size:1em;margin:.2em 0 .5em}
table{border-collapse:collapse;width:100%;font-size:85%} td,th{border-bottom:1px solid #eee;padding:2px 5px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums} .held{color:#b00} svg.world{width:100%;max-width:860px;height:auto;display:block}
button{margin-right:.4em} #stale{color:#fc6}
"""

_SCRIPT = """
const TOKEN = new URLSearchParams(location.search).get('token') || '';
const CENTRES = JSON.parse(document.getElementById('centres').textContent);
const $ = id => document.getElementById(id);
const fmt = v => v === null || v === undefined ? '' : (typeof v === 'number' && !Number.isInteger(v) ? String(Number(v.toPrecision(3))) : String(v));
function cells(tr, values, numeric) {
  tr.replaceChildren(...values.map((v, i) => { const td = document.createElement('td');
    td.textContent = fmt(v); if (numeric && numeric[i]) td.className = 'n'; return td; }));
}
function fillTable(id, rows, numeric) {
  const body = $(id).tBodies[0];
  body.replaceChildren(...rows.map(r => { const tr = document.createElement('tr'); cells(tr, r, numeric); return tr; }));
}
function chart(series) {
  // Fills its panel; a time axis (clock times) below and a pages/s axis at the left.
  const c = $('chart'), g = c.getContext('2d');
  c.width = Math.max(240, c.clientWidth); c.height = 180;
  const w = c.width, h = c.height, left = 44, bottom = 18;
  g.clearRect(0, 0, w, h);
  g.fillStyle = '#555'; g.font = '11px sans-serif';
  if (series.length < 2) { g.fillText('waiting for the first readings…', left, h / 2); return; }
  const t0 = series[0][0], t1 = series[series.length - 1][0] || t0 + 1;
  const top = Math.max(1, ...series.map(s => s[1])) * 1.1;
  const x = t => left + (t - t0) / Math.max(1e-9, t1 - t0) * (w - left - 6), y = r => h - bottom - r / top * (h - bottom - 8);
  g.strokeStyle = '#ccd'; g.beginPath(); g.moveTo(left, 4); g.lineTo(left, h - bottom); g.lineTo(w, h - bottom); g.stroke();
  g.textAlign = 'right'; g.fillText(top.toFixed(1), left - 4, 12); g.fillText('0', left - 4, h - bottom);
  g.save(); g.translate(10, (h - bottom) / 2); g.rotate(-Math.PI / 2); g.textAlign = 'center';
  g.fillText('pages/s', 0, 0); g.restore();
  g.textAlign = 'left'; g.fillText(duration(t1 - t0) + ' ago', left, h - 4);
  g.textAlign = 'right'; g.fillText('now', w - 2, h - 4);
  g.textAlign = 'center'; g.fillText('time', (left + w) / 2, h - 4);
  g.strokeStyle = '#1f6fb2'; g.lineWidth = 2; g.beginPath();
  series.forEach(([t, r], i) => i ? g.lineTo(x(t), y(r)) : g.moveTo(x(t), y(r)));
  g.stroke();
}
function duration(seconds) {
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 60) return seconds + ' s';
  if (seconds < 3600) return Math.floor(seconds / 60) + ' min ' + String(seconds % 60).padStart(2, '0') + ' s';
  return Math.floor(seconds / 3600) + ' h ' + String(Math.floor(seconds % 3600 / 60)).padStart(2, '0') + ' min';
}
function finishes(s) {
  const e = s.estimate;
  if (!e) return 'not yet known';
  const at = new Date((s.time + e.seconds) * 1000).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
  return 'about ' + at + ' (in ' + duration(e.seconds) + '; ' + duration(e.low) + ' to ' + duration(e.high) +
    (e.growing ? '; still growing' : '') + ')';
}
function drawMap(locations) {
  const layer = document.querySelector('#map .servers'), aside = [];
  const biggest = Math.max(1, ...Object.values(locations));
  layer.replaceChildren();
  for (const [label, count] of Object.entries(locations)) {
    const c = CENTRES[label];
    if (!c) { aside.push(label + ': ' + count); continue; }
    const dot = document.createElementNS('http://www.w3.org/2000/svg', 'circle');
    dot.setAttribute('class', 'server'); dot.dataset.location = label;
    dot.setAttribute('cx', (c[1] + 180) / 360 * 1000); dot.setAttribute('cy', (90 - c[0]) / 180 * 500);
    dot.setAttribute('r', 3 + 12 * Math.sqrt(count / biggest));
    const title = document.createElementNS('http://www.w3.org/2000/svg', 'title');
    title.textContent = c[2] + ': ' + count + ' servers'; dot.appendChild(title); layer.appendChild(dot);
  }
  // The map only when there is more than one place; else a sentence.
  const places = Object.keys(locations), total = Object.values(locations).reduce((a, b) => a + b, 0);
  $('map').style.display = places.length > 1 ? '' : 'none';
  $('unplaced').textContent = places.length > 1 ? (aside.length ? 'Not on the map: ' + aside.join(', ') : '')
    : places.length ? 'All ' + total + ' servers are in one place: ' + places[0] + '.' : 'No server yet.';
}
function show(s) {
  $('spider').textContent = s.spider; $('worker').textContent = s.worker;
  $('state').textContent = s.paused ? 'paused' : (s.finished ? 'finished' : 'running');
  $('uptime').textContent = Math.round(s.uptime) + ' s';
  $('pages').textContent = s.pages; $('pages-per-s').textContent = s.pages_per_s.toFixed(2);
  $('updated').textContent = new Date(s.time * 1000).toLocaleTimeString();
  // As the console counts them: a revisit is not a new page.
  $('stored').textContent = s.revisit.new_pages; $('revisits').textContent = s.revisit.visits;
  const ch = s.changes || {recent: [], meaningful: 0};
  $('meaningful').textContent = ch.meaningful;
  $('feed').href = 'changes.atom' + location.search;
  fillTable('changes', ch.recent.map(c => [c.url, new Date(c.at * 1000).toLocaleTimeString(), c.reason,
    Math.round(c.similarity * 100) + '%', c.lines_added, c.lines_removed]), [0, 0, 0, 1, 1, 1]);
  chart(s.series);
  fillTable('errors', Object.entries(s.errors), [0, 1]);
  const f = s.frontier;
  fillTable('frontier', [['queued', f.queued], ['in memory', f.memory], ['on disk', f.disk], ['front tier', f.front],
    ['back tier', f.back], ['spill bytes', f.spill_bytes], ['active hosts', f.active_hosts],
    ['due hosts', f.due_hosts], ['in flight', f.in_flight],
    ['finishes', finishes(s)],
    ['dead letters', s.deadletters || 0], ['store commit lag s', s.store ? s.store.commit_lag_s : ''],
    ['memory MB', s.memory ? Math.round(s.memory.rss_bytes / 1048576) : ''],
    ['memory growth MB per 1,000 pages', s.memory && s.memory.growth_per_1000_pages !== null
      ? (s.memory.growth_per_1000_pages / 1048576).toFixed(1) : 'not yet known'],
    ['browser memory MB', s.memory ? Math.round(s.memory.browser_rss_bytes / 1048576) : '']], [0, 1]);
  const d = s.near_duplicates, r = s.revisit, j = s.renders;
  fillTable('rates', [['near-duplicates checked', d.checked], ['near-duplicates found', d.duplicates],
    ['near-duplicate rate', d.rate], ['revisits', r.requests], ['revisits changed', r.changed],
    ['revisits 304', r.not_modified], ['revisit change rate', r.change_rate], ['URLs tracked', r.tracked],
    ['new pages stored', r.new_pages], ['revisits stored', r.visits],
    ['changes recorded', s.changes ? s.changes.recorded : 0], ['meaningful changes', s.changes ? s.changes.meaningful : 0],
    ['JavaScript renders', j.rendered], ['pages kept static', j.static], ['render timeouts', j.timeouts],
    ['evidence renders (kept)', j.samples + ' (' + j.sample_gains + ')'],
    ['hosts rendered directly', j.hosts_rendered_directly],
    ['URLs with importance state', s.ordering.tracked], ['promotions', s.ordering.promotions],
    ['topical harvest rate', s.ordering.harvest_rate], ['dropped by the opt-out list', s.ordering.opt_out_dropped]],
    [0, 1]);
  $('hosts-shown').textContent = s.hosts.length + ' of ' + s.hosts_total;
  fillTable('hosts', s.hosts.map(h => [h.host, h.location, h.interval, h.rule,
    h.components ? Object.entries(h.components).map(([k, v]) => k + '=' + v.toFixed(2)).join(' ') : '',
    h.crawl_delay, h.robots, h.robots_age, h.held || '', h.queued, h.in_flight ? 'yes' : '', h.due_in,
    h.last_status, h.fetches, h.errors,
    h.load_index === undefined ? '' : h.load_index * 86400,
    h.render ? h.render.mode + ' (' + h.render.gains + '/' + h.render.comparisons + ' gained)' : '']),
    [0, 0, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1, 0]);
  drawMap(s.locations);
  fillTable('workers', (s.workers || []).map(w => [w.worker, w.age, w.pages, w.pages_per_s, w.frontier.in_flight,
    w.frontier.active_hosts, w.hosts_total]), [0, 1, 1, 1, 1, 1, 1]);
  $('workers-panel').hidden = !s.workers;
}
function connect() {
  const events = new EventSource('events?token=' + encodeURIComponent(TOKEN));
  events.addEventListener('snapshot', e => { $('stale').textContent = ''; show(JSON.parse(e.data)); });
  events.onerror = () => { $('stale').textContent = 'reconnecting…'; };
}
document.querySelectorAll('button[data-action]').forEach(b => b.addEventListener('click', () =>
  fetch('control?token=' + encodeURIComponent(TOKEN) + '&action=' + b.dataset.action, {method: 'POST'})));
connect();
"""


def _table(table_id: str, *columns: str) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody></tbody></table>'


def render_page(role: str) -> str:
    """The page for ``role`` ("operator" gets the controls; "viewer" the read-only view)."""
    centres = {code: [c["lat"], c["lon"], c["name"]] for code, c in countries().items()}
    centres_json = json.dumps(centres).replace("</", "<\\/")  # never closes its <script>
    controls = ('<span id="controls"><button data-action="pause">Pause</button>'
                '<button data-action="resume">Resume</button><button data-action="stop">Stop</button></span>'
                if role == "operator" else '<span class="badge" id="read-only">read-only view</span>')
    hosts = _table("hosts", "host", "location", "interval s", "rule", "rules (s)", "crawl-delay", "robots.txt",
                   "robots age s", "held", "queue", "in flight", "due in s", "last status", "fetches", "errors",
                   "revisits/day (load index)", "rendering (evidence)")
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>crawlproj dashboard</title>
<style>{_STYLE}</style></head><body data-role="{html.escape(role)}">
<header><b>crawlproj</b><span>spider <span id="spider"></span></span><span>worker <span id="worker"></span></span>
<span class="badge" id="state">connecting</span><span>up <span id="uptime"></span></span>
<span><span id="pages">0</span> pages fetched</span><span><span id="stored">0</span> new pages stored</span>
<span><span id="revisits">0</span> revisits</span><span><span id="meaningful">0</span> meaningful changes</span><span><span id="pages-per-s">0</span> pages/s</span>
<span>updated <span id="updated"></span> <span id="stale"></span></span>{controls}</header>
<main>
<section><h2>Pages per second</h2><canvas id="chart" width="520" height="180" style="width:100%"></canvas></section>
<section><h2>Errors by kind</h2>{_table("errors", "kind", "count")}</section>
<section><h2>Frontier</h2>{_table("frontier", "", "")}</section>
<section><h2>Duplicates, revisits, renders, ordering</h2>{_table("rates", "", "")}</section>
<section class="wide"><h2>Servers by location</h2>
{world_map_svg({}, element_id="map")}
<div id="unplaced"></div></section>
<section class="wide" id="workers-panel" hidden><h2>Workers (over Redis)</h2>
{_table("workers", "worker", "age s", "pages", "pages/s", "in flight", "active hosts", "hosts")}</section>
<section class="wide"><h2>Recent meaningful changes (<a id="feed" href="changes.atom">Atom feed</a>)</h2>
{_table("changes", "page", "when", "what", "alike", "lines +", "lines -")}</section>
<section class="wide"><h2>Hosts (<span id="hosts-shown"></span>, most recently active first)</h2>{hosts}</section>
</main>
<script type="application/json" id="centres">{centres_json}</script>
<script>{_SCRIPT}</script></body></html>"""
