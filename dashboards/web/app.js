// The netbox dashboard: polls the admin JSON API of the proxy that served this page
// (same origin only; the page makes no request to any other host) and redraws. The chart
// is drawn from the audit store for the chosen window (/api/timeline), so it shows what
// happened before the page was opened; an agent's page is the same view for one agent
// (#agent=NAME, linked from the agents table).
"use strict";

const POLL_MS = 2000;
const DECISIONS = ["allow", "deny", "report", "cap", "budget", "error"];
const COLORS = { allow: "#3fb27f", deny: "#e5534b", report: "#d4a72c", cap: "#b083f0", budget: "#e0823d",
                 error: "#8595a7" };

const $ = (id) => document.getElementById(id);
let chart = null;
let timeline = { key: "", at: 0, bucket: 0 };  // the last timeline drawn: its filters, when, its bucket

function filters() {
  const p = new URLSearchParams();
  const agent = $("f-agent").value, host = $("f-host").value.trim(), decision = $("f-decision").value;
  if (agent) p.set("agent", agent);
  if (host) p.set("host", host);
  if (decision) p.set("decision", decision);
  p.set("since", $("f-since").value);
  return p;
}

async function getJSON(path) {
  const r = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

function fmtBytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${u[i]}`;
}
const fmtTime = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "");

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text == null ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

// A denied host's reasons, most frequent first; each with its count when there are several.
// A denial stored without a reason comes as null.
function reasons(host) {
  const several = host.reasons.length > 1;
  return host.reasons.map((r) => `${r.reason ?? "no reason recorded"}${several ? ` (${r.count})` : ""}`).join("; ");
}

function fill(tableId, rows, render, emptyText) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren();
  if (!rows.length) {
    const tr = document.createElement("tr");
    const td = cell(emptyText, "empty");
    td.colSpan = $(tableId).querySelectorAll("th").length;
    tr.appendChild(td);
    body.appendChild(tr);
    return;
  }
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const td of render(row)) tr.appendChild(td);
    body.appendChild(tr);
  }
}

function makeChart() {
  const el = $("chart");
  const opts = {
    width: el.clientWidth || 800,
    height: 220,
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
    axes: [{ stroke: "#8595a7", grid: { stroke: "#26313d" } },
           { stroke: "#8595a7", grid: { stroke: "#26313d" }, label: "requests" }],
    series: [{}].concat(DECISIONS.map((d) => ({ label: d, stroke: COLORS[d], width: 2,
                                                 fill: COLORS[d] + "22", points: { show: false } }))),
  };
  chart = new uPlot(opts, [[], ...DECISIONS.map(() => [])], el);
  window.addEventListener("resize", () => chart.setSize({ width: el.clientWidth, height: 220 }));
}

function fmtBucket(s) {
  if (s % 86400 === 0) return `${s / 86400} d`;
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

// The store's counts per bucket over the window, every bucket drawn (0 where the store has
// no request). Fetched again once a bucket has had time to change, or when a filter did.
async function refreshTimeline(q) {
  const key = q.toString();
  const every = Math.min(30000, Math.max(POLL_MS, (timeline.bucket * 1000) / 4));
  if (key === timeline.key && Date.now() - timeline.at < every) return;
  const tl = await getJSON(`/api/timeline?${q}`);
  const b = tl.bucket_seconds;
  const byStart = new Map(tl.points.map((p) => [p.t, p]));
  const xs = [], ys = DECISIONS.map(() => []);
  for (let t = Math.floor(tl.from / b) * b; t <= tl.to; t += b) {
    const p = byStart.get(t) || {};
    xs.push(t);
    DECISIONS.forEach((d, i) => ys[i].push(p[d] || 0));
  }
  chart.setData([xs, ...ys]);
  $("chart-title").textContent = `Requests by decision, per ${fmtBucket(b)}`;
  timeline = { key, at: Date.now(), bucket: b };
}

function addAgentOption(name) {
  const sel = $("f-agent");
  if ([...sel.options].some((o) => o.value === name)) return;
  const o = document.createElement("option");
  o.value = o.textContent = name;
  sel.appendChild(o);
}

function refreshAgentOptions(agents) {
  for (const a of agents) addAgentOption(a.agent);
}

function agentLink(name) {
  const td = document.createElement("td");
  const a = document.createElement("a");
  a.href = `#agent=${encodeURIComponent(name)}`;
  a.textContent = name;
  td.appendChild(a);
  return td;
}

// An agent's page: the whole view filtered to that agent, named in the heading, with the
// way back; the address (#agent=NAME) can be shared.
function showAgentPage() {
  const m = /^#agent=(.+)$/.exec(location.hash);
  const name = m ? decodeURIComponent(m[1]) : "";
  if (name) addAgentOption(name);
  $("f-agent").value = name;
  $("agent-page").hidden = !name;
  $("agent-name").textContent = name;
}

// The questions of agents launched with --ask (/api/pending, served only behind the admin
// token): each with its answers, POSTed to /api/approve or /api/deny. The panel stays hidden
// when the proxy asks nobody or the endpoint has no token.
function answerButton(p, label, op, scope) {
  const b = document.createElement("button");
  b.textContent = label;
  b.addEventListener("click", async () => {
    const body = { id: p.id };
    if (scope) body.scope = scope;
    const r = await fetch(`/api/${op}`, { method: "POST", credentials: "same-origin",
                                          headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (!r.ok) $("status").textContent = `${op}: ${(await r.json()).error}`;
    refreshPending();
  });
  return b;
}

async function refreshPending() {
  let r;
  try {
    r = await getJSON("/api/pending");
  } catch (e) {
    r = { answerable: false };
  }
  if (r.answerable === false) {  // no --ask agent, or no admin token: nothing to answer here
    $("pending-panel").hidden = true;
    return;
  }
  $("pending-panel").hidden = false;
  fill("pending", r.pending, (p) => {
    const answers = document.createElement("td");
    for (const s of p.scopes) answers.append(answerButton(p, s === "once" ? "allow once" : `allow (${s})`, "approve", s));
    answers.append(answerButton(p, "deny", "deny"));
    return [cell(fmtTime(p.first_seen)), cell(p.agent), cell(`${p.host}:${p.port}`), cell(p.door),
            cell(p.waiters, "num"), answers];
  }, "nothing is waiting");
}

async function poll() {
  refreshPending();
  const q = filters();
  try {
    const agent = $("f-agent").value;
    const [summary, agents, requests, denials, events, launches] = await Promise.all([
      getJSON(`/api/summary?${q}`),
      getJSON(`/api/agents?${q}`),
      getJSON(`/api/requests?${q}&limit=25`),
      getJSON(`/api/requests?${new URLSearchParams({ ...Object.fromEntries(q), decision: "deny" })}&limit=25`),
      getJSON(`/api/events?${new URLSearchParams({ since: q.get("since") })}&limit=25`),
      agent ? getJSON(`/api/launches?${new URLSearchParams({ agent })}&limit=10`) : Promise.resolve([]),
    ]);
    const t = summary.totals;
    $("t-allow").textContent = t.allow;
    $("t-deny").textContent = t.deny;
    $("t-report").textContent = t.report;
    $("t-active").textContent = summary.live.active_connections;
    $("t-bytes").textContent = `${fmtBytes(t.bytes_up)} / ${fmtBytes(t.bytes_down)}`;
    await refreshTimeline(q);
    fill("denied-hosts", summary.top_denied, (r) => [cell(r.host), cell(r.count, "num"), cell(reasons(r))],
         "no denials in this window");
    refreshAgentOptions(agents);
    fill("agents", agents, (a) => [agentLink(a.agent), cell(a.requests, "num"), cell(a.denied, "num"),
                                   cell(fmtBytes(a.bytes_up), "num"), cell(fmtBytes(a.bytes_down), "num"),
                                   cell(fmtTime(a.last_seen))], "no agents in this window");
    fill("denials", denials, (r) => [cell(fmtTime(r.ts)), cell(r.agent), cell(`${r.host}:${r.port}`), cell(r.rule),
                                     cell(r.reason)], "no denials in this window");
    fill("events", events, (e) => [cell(fmtTime(e.ts)), cell(e.kind), cell(e.count, "num"), cell(e.message)],
         "no events in this window");
    $("launches-panel").hidden = !agent;
    if (agent)
      fill("launches", launches, (l) => [cell(fmtTime(l.started)), cell(fmtTime(l.ended) || "running"), cell(l.mode),
                                         cell(l.exit_status, "num"), cell(l.end_reason), cell(l.command_line)],
           "no launch of this agent recorded");
    fill("requests", requests, (r) => [cell(fmtTime(r.ts)), cell(r.agent), cell(r.kind),
                                       cell(`${r.host}:${r.port}${r.path || ""}`), cell(r.decision, `d-${r.decision}`),
                                       cell(r.status), cell(`${fmtBytes(r.bytes_up)} / ${fmtBytes(r.bytes_down)}`, "num")],
         "no requests in this window");
    $("status").textContent = `updated ${new Date().toLocaleTimeString()}`;
    $("status").className = "status";
  } catch (e) {
    $("status").textContent = `cannot reach the admin API: ${e.message}`;
    $("status").className = "status err";
  }
}

makeChart();
showAgentPage();
window.addEventListener("hashchange", () => { showAgentPage(); poll(); });
$("f-agent").addEventListener("change", () => {
  const name = $("f-agent").value;
  history.replaceState(null, "", name ? `#agent=${encodeURIComponent(name)}` : location.pathname + location.search);
  showAgentPage();
});
$("filters").addEventListener("change", poll);
$("f-host").addEventListener("input", () => { clearTimeout(window._h); window._h = setTimeout(poll, 400); });
poll();
setInterval(poll, POLL_MS);
