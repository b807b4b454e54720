package flamegraphs

import (
	"encoding/json"
	"html/template"
	"io"
)

var kinds = map[string]int{"runtime": 1, "std": 2, "third-party": 3, "own": 4}

// WriteHTML writes t as one self-contained, interactive HTML file: no
// network, no CDN. Click to zoom, search with the matched share, hover for
// details, a sandwich view of callers and callees, colours by kind of code
// (or by change, in a diff), the frames findings name outlined. The
// fragment #focus=<frame> (URI-encoded) opens the page zoomed to that frame
// with its occurrences marked.
//
// Trees larger than o.MaxFrames (default 100,000) lose their smallest frames
// first (see Node.Prune); the page says how many.
func WriteHTML(w io.Writer, t *Tree, o Options) error {
	if o.MaxFrames == 0 {
		o.MaxFrames = 100_000
	}
	elided := t.Root.Prune(o.MaxFrames)
	names, files := map[string]int{}, map[string]int{}
	var nameList, fileList []string
	intern := func(m map[string]int, list *[]string, s string) int {
		i, ok := m[s]
		if !ok {
			i = len(*list)
			m[s] = i
			*list = append(*list, s)
		}
		return i
	}
	var enc func(n *Node) []any
	enc = func(n *Node) []any {
		kids := make([]any, 0, len(n.Children))
		for _, c := range n.Children {
			kids = append(kids, enc(c))
		}
		return []any{intern(names, &nameList, n.Name), intern(files, &fileList, n.File), kinds[n.Kind], n.Total, n.Self, int64(n.Base), kids}
	}
	tree := enc(t.Root)
	var highlight []string
	for name := range o.Highlight {
		highlight = append(highlight, name)
	}
	data, err := json.Marshal(map[string]any{"title": o.Title, "unit": t.Unit, "sample": t.Sample, "diff": t.Diff, "elided": elided,
		"names": nameList, "files": fileList, "highlight": highlight, "tree": tree})
	if err != nil {
		return err
	}
	return page.Execute(w, map[string]any{"Title": o.Title, "Data": template.JS(data)})
}

var page = template.Must(template.New("flame").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { font: 13px system-ui, sans-serif; margin: 0; background: #fafafa; color: #222; }
header { padding: 8px 12px; display: flex; gap: 10px; align-items: center; flex-wrap: wrap; border-bottom: 1px solid #ddd; }
header h1 { font-size: 15px; margin: 0 12px 0 0; }
#matched { color: #6a2ca0; font-weight: 600; }
canvas { display: block; }
#tip { position: fixed; pointer-events: none; background: #fff; border: 1px solid #999; padding: 6px 8px; font: 12px monospace; white-space: pre; display: none; box-shadow: 2px 2px 6px #0003; max-width: 80vw; overflow: hidden; }
#sandwich { padding: 8px 12px; display: none; border-top: 1px solid #ddd; }
#sandwich table { border-collapse: collapse; margin: 4px 24px 8px 0; display: inline-table; vertical-align: top; }
#sandwich td, #sandwich th { padding: 1px 8px; text-align: left; font: 12px monospace; }
.legend span { display: inline-block; padding: 1px 6px; margin-right: 4px; border-radius: 3px; }
#selftest { display: none; }
</style></head><body>
<header><h1 id="title"></h1>
<button id="reset">Reset zoom</button>
<input id="search" placeholder="search (regexp)" size="28"> <span id="matched"></span>
<button id="sandwichBtn" disabled>Sandwich</button>
<span class="legend" id="legend"></span>
</header>
<canvas id="flame"></canvas>
<div id="sandwich"></div>
<div id="tip"></div>
<pre id="selftest"></pre>
<script id="data" type="application/json">{{.Data}}</script>
<script>
"use strict";
let pageErrors = 0;
window.addEventListener("error", () => { pageErrors++; });
</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const H = 17, KIND = ["", "runtime", "standard library", "third-party", "own code"];
function build(a, parent, depth) {
  const n = {name: D.names[a[0]], file: D.files[a[1]], kind: a[2], total: a[3], self: a[4], base: a[5], parent, depth, children: []};
  for (const c of a[6]) n.children.push(build(c, n, depth + 1));
  return n;
}
const root = build(D.tree, null, 0);
let maxDepth = 0; (function walk(n) { maxDepth = Math.max(maxDepth, n.depth); n.children.forEach(walk); })(root);
const highlight = new Set(D.highlight || []);
const canvas = document.getElementById("flame"), ctx = canvas.getContext("2d");
const tip = document.getElementById("tip");
let zoom = root, matches = null, rects = [], selected = null;
document.getElementById("title").textContent = D.title + (D.diff ? " (differential: red grew, blue shrank)" : "") +
  (D.elided ? " — " + D.elided + " smallest frames elided" : "");
if (!D.diff) document.getElementById("legend").innerHTML = [4, 3, 2, 1].map(k => '<span style="background:' + colour({kind: k, name: ""}) + '">' + KIND[k] + "</span>").join("");
function hash(s) { let h = 2166136261; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return (h >>> 0) % 1000 / 1000; }
function colour(n) {
  if (matches && matches.has(n)) return "#b07fe0";
  if (D.diff) {
    const m = Math.max(n.total, n.base); if (!m) return "hsl(0,0%,95%)";
    const r = (n.total - n.base) / m, l = 95 - 45 * Math.min(1, Math.abs(r));
    return r >= 0 ? "hsl(0,80%," + l + "%)" : "hsl(220,80%," + l + "%)";
  }
  const v = hash(n.name);
  switch (n.kind) {
    case 1: return "hsl(0,0%," + (70 + 12 * v) + "%)";
    case 2: return "hsl(205,65%," + (68 + 14 * v) + "%)";
    case 3: return "hsl(42,85%," + (58 + 14 * v) + "%)";
    case 4: return "hsl(8,80%," + (58 + 14 * v) + "%)";
  }
  return "hsl(0,0%,85%)";
}
function isAncestor(a, n) { for (let p = n; p; p = p.parent) if (p === a) return true; return false; }
function fmt(v) {
  if (D.unit === "nanoseconds") return (v / 1e9).toPrecision(3) + "s";
  if (D.unit === "bytes") return (v / 1e6).toPrecision(3) + " MB";
  return String(Math.round(v));
}
function draw() {
  const W = canvas.parentElement.clientWidth || 1200;
  canvas.width = W; canvas.height = (maxDepth + 1) * H + 4;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = "12px monospace"; ctx.textBaseline = "middle";
  rects = [];
  const scale = W / Math.max(1, zoom.total);
  function place(n, x) {
    const w = n.total * scale;
    if (w < 0.5) return;
    const y = canvas.height - (n.depth + 1) * H;
    rects.push({n, x, y, w});
    ctx.fillStyle = colour(n); ctx.fillRect(x, y, w - 0.5, H - 1);
    if (highlight.has(n.name)) { ctx.strokeStyle = "#000"; ctx.lineWidth = 2; ctx.strokeRect(x + 1, y + 1, w - 2.5, H - 3); }
    const fits = Math.floor((w - 6) / 7);
    if (fits >= 3) { ctx.fillStyle = "#000"; ctx.fillText(n.name.length <= fits ? n.name : n.name.slice(0, fits - 1) + "…", x + 3, y + H / 2); }
    let cx = x;
    for (const c of n.children) { place(c, cx); cx += c.total * scale; }
  }
  // The zoomed frame's ancestors span the width, dimmed by nothing: the path to it.
  for (let p = zoom.parent; p; p = p.parent) {
    const y = canvas.height - (p.depth + 1) * H;
    rects.push({n: p, x: 0, y, w: W});
    ctx.fillStyle = colour(p); ctx.fillRect(0, y, W - 0.5, H - 1);
    ctx.fillStyle = "#000"; ctx.fillText(p.name.slice(0, Math.floor(W / 7) - 1), 3, y + H / 2);
  }
  place(zoom, 0);
  window.flameState = {frames: rects.length, zoom: zoom.name};
}
function at(ev) {
  const b = canvas.getBoundingClientRect(), x = ev.clientX - b.left, y = ev.clientY - b.top;
  for (let i = rects.length - 1; i >= 0; i--) { const r = rects[i]; if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + H) return r.n; }
  return null;
}
canvas.addEventListener("mousemove", ev => {
  const n = at(ev);
  if (!n) { tip.style.display = "none"; return; }
  let s = n.name + "\n" + n.file + "\ntotal " + fmt(n.total) + " (" + (100 * n.total / root.total).toFixed(2) + "%), self " + fmt(n.self) + " (" + (100 * n.self / root.total).toFixed(2) + "%)";
  if (D.diff) s += "\nbefore " + fmt(n.base) + ", after " + fmt(n.total) + ", delta " + (100 * (n.total - n.base) / root.total).toFixed(2) + "% of the total";
  if (KIND[n.kind]) s += "\n" + KIND[n.kind];
  tip.textContent = s; tip.style.display = "block";
  tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - tip.offsetWidth - 4) + "px"; tip.style.top = (ev.clientY + 12) + "px";
});
canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
canvas.addEventListener("click", ev => {
  const n = at(ev); if (!n) return;
  zoom = n; selected = n.name;
  document.getElementById("sandwichBtn").disabled = false;
  draw();
});
document.getElementById("reset").onclick = () => { zoom = root; draw(); };
function search(term) {
  let re; try { re = new RegExp(term); } catch (e) { re = null; }
  matches = null;
  const out = document.getElementById("matched");
  if (!term) { out.textContent = ""; draw(); return {count: 0, share: 0}; }
  matches = new Set(); let top = 0;
  (function walk(n, under) {
    const hit = re ? re.test(n.name) : n.name.includes(term);
    if (hit) { matches.add(n); if (!under) top += n.total; }
    n.children.forEach(c => walk(c, under || hit));
  })(root, false);
  const share = 100 * top / Math.max(1, root.total);
  out.textContent = matches.size ? "matched " + share.toFixed(2) + "% of samples (" + matches.size + " frames)" : "no match";
  draw();
  return {count: matches.size, share};
}
document.getElementById("search").addEventListener("input", ev => search(ev.target.value));
function sandwich(name) {
  const callers = new Map(), callees = new Map(); let total = 0;
  (function walk(n, under) {
    const hit = n.name === name;
    if (hit) {
      if (!under) total += n.total;
      const p = n.parent ? n.parent.name : "(root)"; callers.set(p, (callers.get(p) || 0) + n.total);
      for (const c of n.children) callees.set(c.name, (callees.get(c.name) || 0) + c.total);
    }
    n.children.forEach(c => walk(c, under || hit));
  })(root, false);
  const table = (title, m) => "<table><tr><th>" + title + "</th><th>total</th></tr>" + [...m].sort((a, b) => b[1] - a[1]).slice(0, 30)
    .map(([k, v]) => "<tr><td>" + k.replace(/&/g, "&amp;").replace(/</g, "&lt;") + "</td><td>" + (100 * v / root.total).toFixed(2) + "%</td></tr>").join("") + "</table>";
  const el = document.getElementById("sandwich");
  el.innerHTML = "<b>" + name.replace(/&/g, "&amp;").replace(/</g, "&lt;") + "</b>: " + (100 * total / root.total).toFixed(2) + "% of samples<br>" + table("callers", callers) + table("callees", callees);
  el.style.display = "block";
}
document.getElementById("sandwichBtn").onclick = () => { if (selected) sandwich(selected); };
window.addEventListener("resize", draw);
draw();
// #focus=<frame> (a report's link to a finding): zoom to the frame's
// heaviest occurrence and mark every occurrence, as a search for it would.
function focusFrame(name) {
  let best = null;
  (function walk(n) { if (n.name === name && (!best || n.total > best.total)) best = n; n.children.forEach(walk); })(root);
  if (!best) { document.getElementById("matched").textContent = "no frame " + name; return null; }
  document.getElementById("search").value = name;
  search(name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  zoom = best; selected = best.name;
  document.getElementById("sandwichBtn").disabled = false;
  draw();
  document.body.dataset.focus = best.name;
  return best;
}
if (location.hash.startsWith("#focus=")) focusFrame(decodeURIComponent(location.hash.slice(7)));
if (location.hash.startsWith("#selftest=")) {
  const term = decodeURIComponent(location.hash.slice(10));
  const r = search(term);
  const st = document.getElementById("selftest");
  // Exercise the rest of the page too, then report.
  const hit = rects.find(x => x.n.name.includes(term));
  if (hit) { zoom = hit.n; selected = hit.n.name; draw(); sandwich(selected); zoom = root; draw(); }
  st.textContent = "frames=" + window.flameState.frames + " matches=" + r.count + " share=" + r.share.toFixed(2) +
    " sandwich=" + (document.getElementById("sandwich").style.display === "block") + " errors=" + pageErrors;
}
</script></body></html>
`))
