/**
 * `GET /`: a small live page over the HTTP API — the fleet coloured by radius, the approvals
 * waiting (approve / reject), the world state and the live events — so the demo shows something
 * in a browser before the full dashboard is built. It holds no data itself: it calls the API with
 * the token the user pastes, or that the URL's fragment carries (`/#token=…`; a fragment is never
 * sent to the server), kept in the browser's session storage.
 */
import { RADIUS_PALETTE } from '../../protocol/index.js';
import type { RouteSpec } from './route.js';

function page(): string {
  const radiusCss = Object.entries(RADIUS_PALETTE)
    .map(([r, c]) => `.r-${r}{background:${c.bg};color:${c.fg}}`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Fleetgate</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>
body{font:14px system-ui,sans-serif;margin:1.5rem;color:#111827;background:#f9fafb}
h1{font-size:1.3rem;margin:0 0 .5rem}h2{font-size:1rem;margin:1.2rem 0 .4rem}
table{border-collapse:collapse;background:#fff}td,th{padding:.25rem .6rem;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top}
.badge{padding:.05rem .45rem;border-radius:.6rem;font-size:.8rem}${radiusCss}.r-unknown{background:#e5e7eb;color:#111827}
pre{background:#fff;padding:.6rem;max-height:18rem;overflow:auto;border:1px solid #e5e7eb}
#events{font:12px ui-monospace,monospace;white-space:pre-wrap}
.muted{color:#6b7280}button{margin-right:.3rem}
</style></head><body>
<h1>Fleetgate</h1>
<div><label>Token <input id="token" type="password" size="48" placeholder="paste the token the gateway printed"></label>
<button id="save">Use</button> <span id="status" class="muted"></span></div>
<h2>Fleet</h2><table id="fleet"><thead><tr><th>agent</th><th>card</th><th>skill</th><th>radius</th><th>mode</th><th>domains</th></tr></thead><tbody></tbody></table>
<h2>Approvals waiting</h2><table id="approvals"><thead><tr><th>id</th><th>call</th><th>radius</th><th>mode</th><th>reasons</th><th></th></tr></thead><tbody></tbody></table>
<h2>World state</h2><pre id="world"></pre>
<h2>Live events</h2><pre id="events"></pre>
<script>
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
// A token in the fragment (never sent to the server) is kept for the session and removed from the address bar.
const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
if (fromHash) { sessionStorage.setItem('fleetgate-token', fromHash); history.replaceState(null, '', location.pathname); }
let token = sessionStorage.getItem('fleetgate-token') || '';
$('token').value = token;
$('save').onclick = () => { token = $('token').value.trim(); sessionStorage.setItem('fleetgate-token', token); refresh(); stream(); };
const api = async (path, init = {}) => {
  const res = await fetch(path, { ...init, headers: { ...(init.headers || {}), ...(token ? { authorization: 'Bearer ' + token } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && (body.error.code + ': ' + body.error.message)) || res.statusText);
  return body;
};
const badge = (r) => '<span class="badge r-' + esc(r || 'unknown') + '">' + esc(r || 'unknown') + '</span>';
async function refresh() {
  try {
    const { agents } = await api('/api/agents');
    $('fleet').tBodies[0].innerHTML = agents.flatMap((a) => (a.skills.length ? a.skills : [{}]).map((s, i) =>
      '<tr><td>' + (i ? '' : esc(a.name)) + '</td><td>' + (i ? '' : esc(a.status)) + '</td><td>' + esc(s.id) + '</td><td>' + (s.id ? badge(s.effectiveRadius) : '') + '</td><td>' + esc(s.hitlMode) + '</td><td>' + esc((s.domains || []).join(', ')) + '</td></tr>')).join('');
    const { approvals } = await api('/api/approvals');
    $('approvals').tBodies[0].innerHTML = approvals.map((a) => '<tr><td>' + esc(a.id.slice(-8)) + '</td><td>' + esc(a.agent + '/' + a.skill) + '</td><td>' + badge(a.radius) + '</td><td>' + esc(a.kind === 'checkpoint' ? 'question: ' + a.question : a.kind === 'follow-up' ? 'follow-up · ' + a.mode : a.mode) + '</td><td>' + esc(a.reasons.map((r) => r.detail).join('; ')) + '</td><td>' +
      (a.kind === 'checkpoint' ? '' : '<button data-id="' + esc(a.id) + '" data-verb="approve">approve</button><button data-id="' + esc(a.id) + '" data-verb="reject">reject</button>') + '</td></tr>').join('') || '<tr><td colspan="6" class="muted">none</td></tr>';
    const { domains } = await api('/api/world');
    $('world').textContent = JSON.stringify(Object.fromEntries(Object.entries(domains).map(([k, v]) => [k + ' v' + v.version, v.state])), null, 2);
    $('status').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) { $('status').textContent = e.message; }
}
$('approvals').onclick = async (e) => {
  const b = e.target.closest('button'); if (!b) return;
  try { await api('/api/approvals/' + b.dataset.id + '/' + b.dataset.verb, { method: 'POST', body: '{}' }); } catch (err) { alert(err.message); }
  refresh();
};
let controller;
async function stream() {
  if (controller) controller.abort();
  controller = new AbortController();
  let last = '';
  for (;;) {
    try {
      const res = await fetch('/api/events', { signal: controller.signal, headers: { ...(token ? { authorization: 'Bearer ' + token } : {}), ...(last ? { 'last-event-id': last } : {}) } });
      if (!res.ok) { $('status').textContent = 'events: HTTP ' + res.status; return; }
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read(); if (done) break;
        buf += value; let i;
        while ((i = buf.indexOf('\\n\\n')) >= 0) {
          const frame = buf.slice(0, i); buf = buf.slice(i + 2);
          const id = /^id: (.*)$/m.exec(frame); const data = /^data: (.*)$/m.exec(frame);
          if (id) last = id[1];
          if (!data) continue;
          const ev = JSON.parse(data[1]);
          if (!ev.topic) continue;
          const line = ev.time.slice(11, 19) + ' ' + ev.topic + ' ' + JSON.stringify(ev.payload).slice(0, 160);
          $('events').textContent = (line + '\\n' + $('events').textContent).slice(0, 20000);
          if (/^(world|hitl|skill|fleet)\\./.test(ev.topic)) scheduleRefresh();
        }
      }
    } catch (e) { if (controller.signal.aborted) return; }
    await new Promise((r) => setTimeout(r, 2000));
  }
}
let pending;
function scheduleRefresh() { clearTimeout(pending); pending = setTimeout(refresh, 300); }
refresh(); stream(); setInterval(refresh, 15000);
</script></body></html>`;
}

/** The `GET /` route. */
export function dashboardRoute(): RouteSpec {
  let html: string | undefined;
  return {
    method: 'GET',
    url: '/',
    access: 'public',
    tag: 'service',
    summary: 'A live page over the API: fleet, approvals, world state, events',
    responses: { 200: { description: 'HTML', type: 'text/html' } },
    handler: ({ reply }) => {
      html ??= page();
      return Promise.resolve(
        reply
          .type('text/html; charset=utf-8')
          .header(
            'content-security-policy',
            "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'",
          )
          .send(html),
      );
    },
  };
}
