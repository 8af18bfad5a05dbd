// protomcp playground: an MCP client of the host in plain JavaScript (no build step).
// It POSTs its JSON-RPC messages to /rpc and reads everything back from /events (SSE): its own
// session's messages, the AI client's session (read-only), reloads, load errors and crashes.
// The page is rebuilt from that journal after a reload; form values live in localStorage.
"use strict";

const TOKEN = window.PLAYGROUND_TOKEN;
const PROTOCOL = "2025-11-25";
const SKILLS = "io.modelcontextprotocol/skills";  // the skills extension (SEP-2640)
const APPS = "io.modelcontextprotocol/ui";  // MCP Apps: the page hosts a tool's app (see "apps" below)
const APP_MIME = "text/html;profile=mcp-app";
const ID_PREFIX = "p" + Date.now().toString(36) + "-";
let nextId = 0;

const state = {
  serverCaps: {},
  tools: [], resources: [], templates: [], prompts: [], skills: [],
  calls: new Map(),        // request id -> call record (tools/call of this page)
  pending: new Map(),      // request id -> {resolve, reject} for requests this page load made
  relays: new Map(),       // request id -> the app whose request it is (tools/call, resources/read)
  asks: new Map(),         // server request id -> message (elicitation, sampling, roots) unanswered
  tasks: new Map(),        // taskId -> task
  wire: { page: [], client: [] },
  events: [],
  unseen: 0,
  replayUntil: 0,
  replaying: true,
  initialized: false,
};
const saved = JSON.parse(localStorage.getItem("protomcp-playground") || "{}");
function save() { localStorage.setItem("protomcp-playground", JSON.stringify(saved)); }
saved.args = saved.args || {};

// ---- helpers --------------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c.nodeType ? c : String(c));
  return el;
}
const $ = (sel) => document.querySelector(sel);
const scheduled = new Set();
function schedule(fn) {
  if (scheduled.has(fn)) return;
  scheduled.add(fn);
  requestAnimationFrame(() => { scheduled.delete(fn); fn(); });
}
function jsonTree(value, key) {
  const label = key === undefined ? "" : h("span", { class: "key" }, key + ": ");
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const open = entries.length <= 20;
    return h("details", { open }, h("summary", {}, label, Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`),
      entries.map(([k, v]) => jsonTree(v, k)));
  }
  return h("div", {}, label, JSON.stringify(value));
}

// ---- talking to the host ----------------------------------------------------------------------
async function post(message) {
  const response = await fetch("/rpc?token=" + encodeURIComponent(TOKEN), {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(message),
  });
  if (!response.ok) throw new Error("POST /rpc: " + response.status);
}
function newId() { return ID_PREFIX + (++nextId); }
function request(method, params) {
  const id = newId();
  return new Promise((resolve, reject) => {
    state.pending.set(id, { resolve, reject });
    post({ jsonrpc: "2.0", id, method, params }).catch(reject);
  });
}
function notify(method, params) { return post({ jsonrpc: "2.0", method, params }); }

async function initialize() {
  const result = await request("initialize", {
    protocolVersion: PROTOCOL,
    capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true },
      extensions: { [APPS]: { mimeTypes: [APP_MIME] } } },
    clientInfo: { name: "protomcp-playground", version: "1" },
  });
  state.serverCaps = result.capabilities || {};
  saved.serverCaps = state.serverCaps; save();
  await notify("notifications/initialized", {});
  if (state.serverCaps.logging) await request("logging/setLevel", { level: "debug" });
}
async function listAll(method, key, params = {}) {
  const out = [];
  let cursor;
  do {
    const result = await request(method, cursor ? { ...params, cursor } : params);
    out.push(...(result[key] || []));
    cursor = result.nextCursor;
  } while (cursor);
  return out;
}
async function refreshTools() {
  const before = new Set(state.tools.map((t) => t.name));
  state.tools = await listAll("tools/list", "tools");
  state.toolsListed = true;
  state.newTools = new Set(state.tools.map((t) => t.name).filter((n) => before.size && !before.has(n)));
  schedule(renderTools);
  showReplayedApps();
}
async function refreshResources() {
  if (!state.serverCaps.resources) return;
  state.resources = await listAll("resources/list", "resources");
  state.templates = await listAll("resources/templates/list", "resourceTemplates");
  schedule(renderResources);
  await refreshSkills();  // a skill's SKILL.md is one of the resources
}
async function refreshSkills() {
  if (!(state.serverCaps.extensions || {})[SKILLS]) return;
  state.skills = await listAll("skills/list", "skills");
  schedule(renderSkills);
}
async function refreshPrompts() {
  if (!state.serverCaps.prompts) return;
  state.prompts = await listAll("prompts/list", "prompts");
  schedule(renderPrompts);
}
async function refreshTasks() {
  if (!state.serverCaps.tasks) return;
  const result = await request("tasks/list", {});
  for (const task of result.tasks || []) state.tasks.set(task.taskId, { ...state.tasks.get(task.taskId), ...task });
  schedule(renderTasks);
}
function refreshAll() {
  return Promise.all([refreshTools(), refreshResources(), refreshPrompts(), refreshTasks()]).catch(showError);
}
function showError(err) { $("#status").textContent = String(err && err.message || err); }

// ---- the journal ------------------------------------------------------------------------------
function connect() {
  const events = new EventSource("/events?token=" + encodeURIComponent(TOKEN));
  events.addEventListener("hello", async (e) => {
    const hello = JSON.parse(e.data);
    $("#files").textContent = hello.files.join(", ");
    $("#status").textContent = "live"; $("#status").className = "status live";
    if (state.initialized) return;  // a reconnect: the journal continues where it was
    state.initialized = true;
    state.replayUntil = hello.seq;
    if (hello.seq === 0) endReplay();
    try {
      if (hello.initialized) state.serverCaps = saved.serverCaps || {};
      else await initialize();
      await refreshAll();
    } catch (err) { showError(err); }
  });
  events.onmessage = (e) => {
    const record = JSON.parse(e.data);
    try { handle(record); } catch (err) { console.error(err, record); }
    if (state.replaying && record.seq >= state.replayUntil) endReplay();
  };
  events.onerror = () => { $("#status").textContent = "reconnecting…"; $("#status").className = "status"; };
}
function endReplay() {
  state.replaying = false;
  showNextAsk();
  schedule(renderAll);
  showReplayedApps();
}

function handle(record) {
  switch (record.kind) {
    case "page": return pageMessage(record);
    case "client": state.wire.client.push(record); return schedule(renderWire);
    case "skills": if (!state.replaying) refreshSkills().catch(showError); return;  // dev: a skills folder changed
    case "loaded": case "problem": case "output":
      state.events.push(record);
      if (record.kind !== "output" && !(record.kind === "loaded" && record.initial)) state.unseen++;
      schedule(renderEvents);
  }
}

function pageMessage(record) {
  state.wire.page.push(record);
  schedule(renderWire);
  const msg = record.msg;
  if (!msg || typeof msg !== "object" || Array.isArray(msg)) return;
  if (record.dir === "in") {
    if (msg.method === "tools/call") startCall(msg, record.t);
    else if (msg.method === "notifications/cancelled") {
      const call = state.calls.get(msg.params.requestId);
      // The server answers a cancelled request with nothing (MCP): the call ends here.
      if (call && !call.done) {
        call.cancelled = true; call.done = true; call.ended = record.t; call.status = "cancelled";
        if (call.app) call.app.callEnded();
        schedule(renderCalls);
      }
    } else if (msg.method === undefined && state.asks.has(msg.id)) {
      state.asks.delete(msg.id);  // answered (by this page, or by another tab on the same session)
      if ($("#ask").open && $("#ask").dataset.id === String(msg.id)) $("#ask").close("dropped");
    }
    return;
  }
  if (msg.id !== undefined && msg.method === undefined) {  // a response
    const app = state.relays.get(msg.id);
    if (app) { state.relays.delete(msg.id); app.relayed(msg); }
    const waiter = state.pending.get(msg.id);
    if (waiter) {
      state.pending.delete(msg.id);
      if (msg.error) waiter.reject(new Error(msg.error.message)); else waiter.resolve(msg.result);
    }
    const call = state.calls.get(msg.id);
    if (call) finishCall(call, msg, record.t);
    return;
  }
  if (msg.id !== undefined) {  // a request for this page's person
    state.asks.set(msg.id, { ...msg, related: record.related });
    if (!state.replaying) showNextAsk();
    return;
  }
  const params = msg.params || {};
  switch (msg.method) {
    case "notifications/progress": {
      const call = state.calls.get(params.progressToken);
      if (call) { call.progress = params; schedule(renderCalls); }
      break;
    }
    case "notifications/message": {
      const call = state.calls.get(record.related);
      const line = `${params.level}${params.logger ? " [" + params.logger + "]" : ""}: ${typeof params.data === "string" ? params.data : JSON.stringify(params.data)}`;
      if (call) { call.logs.push(line); schedule(renderCalls); }
      break;
    }
    case "notifications/cancelled":
      state.asks.delete(params.requestId);
      if ($("#ask").open && $("#ask").dataset.id === String(params.requestId)) $("#ask").close("dropped");
      break;
    case "notifications/tasks/status":
      state.tasks.set(params.taskId, { ...state.tasks.get(params.taskId), ...params });
      schedule(renderTasks);
      break;
    case "notifications/tools/list_changed": if (!state.replaying) refreshTools().catch(showError); break;
    case "notifications/resources/list_changed": if (!state.replaying) refreshResources().catch(showError); break;
    case "notifications/prompts/list_changed": if (!state.replaying) refreshPrompts().catch(showError); break;
  }
}

// ---- tools --------------------------------------------------------------------------------------
function startCall(msg, t) {
  const params = msg.params || {};
  const call = { id: msg.id, name: params.name, args: params.arguments || {}, task: !!params.task,
    started: t, logs: [], progress: null, status: "running", done: false, fromApp: APP_ID.test(String(msg.id)),
    replayed: state.replaying };
  state.calls.set(msg.id, call);
  // A call of a tool with an app shows the app (not a call the app made; one replayed after a
  // reload once the replay is over and the tools are listed: showReplayedApps).
  const tool = state.tools.find((x) => x.name === call.name);
  const uri = appResource(tool);
  if (uri && !call.fromApp && !state.replaying) call.app = new AppView(call, tool, uri);
  schedule(renderCalls);
}
// After a page reload the journal gives back the calls: each one of a tool with an app gets its
// app again (the resource read afresh), told the call's input and its outcome as at first.
function showReplayedApps() {
  if (state.replaying || !state.toolsListed) return;
  for (const call of [...state.calls.values()].slice(-MAX_CALLS)) {
    if (!call.replayed || call.fromApp || call.app) continue;
    call.replayed = false;
    const tool = state.tools.find((x) => x.name === call.name);
    const uri = appResource(tool);
    if (!uri) continue;
    call.app = new AppView(call, tool, uri);
    if (call.card) call.card.append(call.app.el);
  }
}
function finishCall(call, msg, t) {
  call.done = true; call.ended = t;
  if (msg.error) { call.status = "error"; call.error = msg.error; }
  else if (msg.result && msg.result.task) {
    call.status = "task created"; call.result = msg.result;
    state.tasks.set(msg.result.task.taskId, { ...msg.result.task, tool: call.name });
    schedule(renderTasks);
  } else { call.result = msg.result; call.status = msg.result && msg.result.isError ? "tool error" : "done"; }
  if (call.app) call.app.callEnded();
  schedule(renderCalls);
}
function callTool(tool, args, asTask) {
  const id = newId();
  saved.args[tool.name] = args; save();
  const params = { name: tool.name, arguments: args, _meta: { progressToken: id } };
  if (asTask) params.task = { ttl: 300000 };
  post({ jsonrpc: "2.0", id, method: "tools/call", params }).catch(showError);
}
function cancelCall(call) {
  notify("notifications/cancelled", { requestId: call.id, reason: "cancelled in the playground" }).catch(showError);
}

function renderTools() {
  const list = $("#tool-list");
  list.replaceChildren(...state.tools.map((tool) => h("button", {
    "data-tool": tool.name, class: (tool.name === saved.tool ? "active " : "") + (state.newTools && state.newTools.has(tool.name) ? "new" : ""),
    onclick: () => { saved.tool = tool.name; save(); renderTools(); },
  }, tool.title || tool.name, appBadge(tool), h("small", {}, (tool.description || "").split("\n")[0]))));
  const tool = state.tools.find((t) => t.name === saved.tool) || state.tools[0];
  const box = $("#tool-form");
  if (!tool) { box.replaceChildren(h("p", {}, "No tools (yet).")); return; }
  if (box.dataset.showing === tool.name && box.dataset.schema === JSON.stringify(tool.inputSchema)) return;
  box.dataset.showing = tool.name; box.dataset.schema = JSON.stringify(tool.inputSchema);
  const form = objectFields(tool.inputSchema || {}, tool.inputSchema || {}, "", saved.args[tool.name], true);
  const support = tool.execution && tool.execution.taskSupport;
  const asTask = support && support !== "forbidden" ? h("input", { type: "checkbox", id: "as-task", checked: support === "required" }) : null;
  box.replaceChildren(h("div", { class: "card" },
    h("h3", {}, tool.title || tool.name), h("p", { class: "desc" }, tool.description || ""),
    form.el,
    asTask ? h("label", {}, asTask, " run as a task") : null,
    h("div", {}, h("button", { class: "primary", id: "call", onclick: () => {
      let args;
      try { args = form.get() || {}; } catch (err) { return showError(err); }
      callTool(tool, args, asTask && asTask.checked);
    } }, "Call"))));
}
// A call's card is made once and updated in place, never moved: an app's frame inside it would
// reload if it were (new calls go on top; past MAX_CALLS the oldest go, their apps torn down).
const MAX_CALLS = 30;
function renderCalls() {
  const box = $("#calls");
  for (const call of state.calls.values()) {
    if (!call.card) {
      call.body = h("div", {});
      call.card = h("div", { "data-call": call.id }, call.body, call.app ? call.app.el : null);
      box.prepend(call.card);
    }
    const cls = { done: "done", error: "error", "tool error": "error", cancelled: "cancelled" }[call.status] || "";
    call.card.className = "card call " + cls;
    call.body.replaceChildren(...renderCall(call).filter((el) => el !== null));
  }
  const shown = [...state.calls.values()];
  for (const call of shown.slice(0, Math.max(0, shown.length - MAX_CALLS))) {
    if (call.app) call.app.close("the call left the list");
    call.card.remove();
    state.calls.delete(call.id);
  }
}
function renderCall(call) {
  const p = call.progress;
  const took = call.done ? ` in ${Math.round(call.ended - call.started)} ms` : "";
  return [
    h("h3", {}, call.name, h("span", { class: "desc" }, " " + JSON.stringify(call.args)), call.fromApp ? h("span", { class: "from-app" }, " from the app") : null),
    h("div", { class: "status" }, call.status + took),
    p && !call.done ? h("div", { class: "progress" },
      h("progress", p.total ? { value: p.progress, max: p.total } : {}), " ", p.message || `${p.progress}${p.total ? "/" + p.total : ""}`) : null,
    !call.done && !call.cancelled ? h("button", { class: "cancel", onclick: () => cancelCall(call) }, "Cancel") : null,
    call.logs.length ? h("div", { class: "logs" }, call.logs.join("\n")) : null,
    call.error ? h("pre", { class: "error-text result" }, `${call.error.code}: ${call.error.message}` + (call.error.data ? "\n" + JSON.stringify(call.error.data, null, 2) : "")) : null,
    call.result && !call.result.task ? renderResult(call.result) : null,
    call.result && call.result.task ? h("div", { class: "result" }, "task ", call.result.task.taskId, " — see Tasks") : null];
}
function renderResult(result) {
  return h("div", { class: "result" + (result.isError ? " error-text" : "") },
    (result.content || []).map(renderBlock),
    result.structuredContent !== undefined ? h("div", { class: "tree" }, h("b", {}, "structuredContent"), jsonTree(result.structuredContent)) : null);
}
function renderBlock(block) {
  switch (block.type) {
    case "text": return h("pre", {}, block.text);
    case "image": return h("img", { src: `data:${block.mimeType};base64,${block.data}`, style: "max-width:100%" });
    case "audio": return h("audio", { controls: true, src: `data:${block.mimeType};base64,${block.data}` });
    case "resource_link": return h("div", {}, "link: ", h("code", {}, block.uri), block.name ? " " + block.name : "");
    case "resource": return h("div", {}, h("code", {}, block.resource.uri), renderContents(block.resource));
    default: return h("div", { class: "tree" }, jsonTree(block));
  }
}
function renderContents(c) {
  if (c.text !== undefined) return h("pre", {}, c.text);
  if (c.blob !== undefined && (c.mimeType || "").startsWith("image/")) return h("img", { src: `data:${c.mimeType};base64,${c.blob}` });
  return h("div", {}, `${(c.blob || "").length} base64 characters (${c.mimeType || "binary"})`);
}

// ---- apps: the page is an MCP Apps host (io.modelcontextprotocol/ui, 2026-01-26) -------------------
// A tool whose _meta.ui.resourceUri names a ui:// resource has an app. At each call the page reads
// that resource (afresh: a saved file shows at the next call), frames the sandbox proxy, served on
// another origin (window.PLAYGROUND_SANDBOX) with the resource's declared CSP as its header, hands
// it the HTML, and talks JSON-RPC with the app over postMessage. Messages from any other window
// than that frame are ignored. The app sees neither this page nor its token.
const SANDBOX = window.PLAYGROUND_SANDBOX;
const APPS_PROTOCOL = "2026-01-26";
const APP_ID = /^p[0-9a-z]+-a\d+$/;  // ids of the requests the page makes for an app
const APP_MAX_HEIGHT = 800;  // px
const SANDBOX_FLAGS = "allow-scripts allow-same-origin allow-forms";  // on another origin than this page
const PERMISSIONS = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };
const apps = new Set();

// In the tool list: "app" for a tool with an app; "app only" for one whose visibility leaves the
// model out (an AI client does not list it; the playground does, to try it).
function appBadge(tool) {
  const visibility = tool._meta && tool._meta.ui && tool._meta.ui.visibility;
  if (Array.isArray(visibility) && !visibility.includes("model")) return h("span", { class: "app-badge" }, " app only");
  return appResource(tool) ? h("span", { class: "app-badge" }, " app") : null;
}
function appResource(tool) {
  const meta = (tool && tool._meta) || {};
  const uri = meta.ui && meta.ui.resourceUri !== undefined ? meta.ui.resourceUri : meta["ui/resourceUri"];
  return typeof uri === "string" && uri.startsWith("ui://") ? uri : undefined;
}
// The spec: a tool is the app's to call unless its _meta.ui.visibility leaves "app" out.
function appMayCall(tool) {
  const visibility = tool && tool._meta && tool._meta.ui && tool._meta.ui.visibility;
  return !Array.isArray(visibility) || visibility.includes("app");
}
// The origins of _meta.ui.csp the proxy's CSP header keeps (the same rule as sandbox.py's SOURCE):
// what the app is told the host approved.
const CSP_SOURCE = /^(https?|wss?):\/\/(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:(\d{1,5}|\*))?\/?$/;
function approved(csp) {
  const out = {};
  for (const key of ["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"]) {
    if (Array.isArray(csp[key])) out[key] = csp[key].filter((s) => typeof s === "string" && CSP_SOURCE.test(s));
  }
  return out;
}
function decodeBlob(blob) {
  return new TextDecoder().decode(Uint8Array.from(atob(blob), (c) => c.charCodeAt(0)));
}

window.addEventListener("message", (event) => {
  for (const app of apps) {
    if (app.frame && event.source === app.frame.contentWindow) {
      if (event.origin === SANDBOX) app.receive(event.data);
      return;
    }
  }
});

class AppView {
  constructor(call, tool, uri) {
    this.call = call; this.tool = tool; this.uri = uri;
    this.initialized = false;  // the app said ui/notifications/initialized
    this.queue = [];           // what waits for that
    this.sentInput = false; this.sentEnd = false; this.htmlSent = false; this.closed = false;
    this.hostRequests = new Map();  // id -> resolve, for the page's own requests to the app
    this.frameBox = h("div", { class: "app-frame" }, "loading the app…");
    this.log = h("div", { class: "app-log" });
    this.messages = h("div", {});
    this.count = h("span", {}, "0");
    this.el = h("div", { class: "app", "data-app": uri },
      h("div", { class: "app-head" }, h("b", {}, "app "), h("code", {}, uri), " ",
        h("button", { class: "app-close", onclick: () => this.close("closed in the playground") }, "Close")),
      this.frameBox, this.log,
      h("details", { class: "app-wire" }, h("summary", {}, this.count, " messages between the page and the app"), this.messages));
    apps.add(this);
    this.load().catch((err) => this.fail(err.message || String(err)));
  }

  async load() {
    const result = await request("resources/read", { uri: this.uri });
    const contents = result.contents || [];
    const content = contents.find((c) => c.uri === this.uri) || contents[0];
    if (!content) throw new Error(`${this.uri}: no contents`);
    if (content.mimeType !== APP_MIME) throw new Error(`${this.uri} is ${content.mimeType || "untyped"}, not ${APP_MIME}`);
    this.html = content.text !== undefined ? content.text : decodeBlob(content.blob || "");
    // The spec puts the app's settings on the content's _meta.ui; the resources/list entry's as a fallback.
    const listed = state.resources.find((r) => r.uri === this.uri);
    const ui = (content._meta && content._meta.ui) || (listed && listed._meta && listed._meta.ui) || {};
    this.csp = ui.csp && typeof ui.csp === "object" ? ui.csp : undefined;
    this.permissions = ui.permissions && typeof ui.permissions === "object" ? ui.permissions : undefined;
    if (this.closed) return;
    const allow = Object.keys(PERMISSIONS).filter((k) => this.permissions && this.permissions[k]).map((k) => PERMISSIONS[k]).join("; ");
    const src = SANDBOX + "/proxy" + (this.csp ? "?csp=" + encodeURIComponent(JSON.stringify(this.csp)) : "");
    this.frame = h("iframe", { sandbox: SANDBOX_FLAGS, referrerpolicy: "origin", allow: allow || undefined, src, title: this.uri });
    this.frame.style.height = "160px";
    this.frameBox.replaceChildren(this.frame);
    this.note("csp", "CSP " + (this.csp ? JSON.stringify(this.csp) : "none declared: no network") +
      (allow ? "; permissions " + allow : ""));
  }

  fail(text) {
    this.frameBox.replaceChildren(h("pre", { class: "error-text" }, "app: " + text));
  }
  // The app's side of the wire, as the Wire view shows the host's (the app's HTML summed up).
  wire(dir, msg) {
    let shown = msg;
    if (msg && msg.params && typeof msg.params.html === "string") shown = { ...msg, params: { ...msg.params, html: `(${msg.params.html.length} characters)` } };
    const line = msg && typeof msg === "object" ? (msg.method || (msg.error ? "error " + msg.error.code : "result")) + (msg.id !== undefined ? " #" + msg.id : "") : String(msg);
    this.messages.append(h("details", { class: "wire-msg" }, h("summary", {}, h("span", { class: "dir-" + dir }, dir === "in" ? "→ " : "← "), line),
      h("pre", {}, JSON.stringify(shown, null, 2))));
    this.count.textContent = String(this.messages.children.length);
  }
  note(kind, text, ...extra) {
    this.log.append(h("div", { class: "app-event", "data-kind": kind }, text, ...extra));
  }

  // -- to the app --------------------------------------------------------------------------------
  post(message) {
    if (this.closed || !this.frame || !this.frame.contentWindow) return;
    this.wire("out", message);
    this.frame.contentWindow.postMessage(message, SANDBOX);
  }
  reply(id, answer) { this.post({ jsonrpc: "2.0", id, ...answer }); }
  // Requests and notifications wait for the app's initialized notification (the spec: nothing before it).
  send(message) {
    if (this.initialized) this.post(message); else this.queue.push(message);
  }
  notify(method, params) { this.send({ jsonrpc: "2.0", method, params }); }
  callEnded() {
    if (this.sentEnd) return;
    const call = this.call;
    if (call.result && call.result.task) return this.taskEnded(call.result.task.taskId);
    if (call.result) { this.sentEnd = true; this.notify("ui/notifications/tool-result", call.result); }
    else if (call.cancelled) { this.sentEnd = true; this.notify("ui/notifications/tool-cancelled", { reason: "cancelled in the playground" }); }
    else if (call.error) { this.sentEnd = true; this.notify("ui/notifications/tool-cancelled", { reason: call.error.message }); }
  }

  // A call run as a task answers with the task; its result comes from tasks/result, which the
  // host answers once the task is over (a cancelled task's result says so).
  taskEnded(taskId) {
    if (this.taskAsked) return;
    this.taskAsked = true;
    request("tasks/result", { taskId }).then(
      (result) => { this.sentEnd = true; this.notify("ui/notifications/tool-result", result); },
      (err) => { this.sentEnd = true; this.notify("ui/notifications/tool-cancelled", { reason: err.message }); });
  }

  // -- from the app ------------------------------------------------------------------------------
  receive(msg) {
    if (this.closed) return;
    this.wire("in", msg);
    if (!msg || typeof msg !== "object" || msg.jsonrpc !== "2.0") return;
    const method = msg.method;
    if (method === "ui/notifications/sandbox-proxy-ready") {
      if (this.htmlSent) return;  // once: a proxy made to load again gets no app
      this.htmlSent = true;
      const params = { html: this.html };
      if (this.csp) params.csp = this.csp;
      if (this.permissions) params.permissions = this.permissions;
      return this.post({ jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready", params });
    }
    if (typeof method === "string" && method.startsWith("ui/notifications/sandbox-")) return;
    if (method === undefined) {  // an answer to the page's own request
      const done = this.hostRequests.get(msg.id);
      if (done) { this.hostRequests.delete(msg.id); done(msg); }
      return;
    }
    if (msg.id === undefined) return this.notification(method, msg.params || {});
    this.request(msg).catch((err) => this.reply(msg.id, { error: { code: -32603, message: String(err && err.message || err) } }));
  }

  notification(method, params) {
    switch (method) {
      case "ui/notifications/initialized":
        if (this.initialized) return;
        this.initialized = true;
        this.note("initialized", "initialized");
        this.post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: this.call.args } });
        for (const message of this.queue.splice(0)) this.post(message);
        return this.callEnded();
      case "ui/notifications/size-changed":
        if (this.frame && typeof params.height === "number") this.frame.style.height = Math.min(Math.max(params.height, 20), APP_MAX_HEIGHT) + "px";
        return;
      case "notifications/message":
        return this.note("log", `log ${params.level}: ${typeof params.data === "string" ? params.data : JSON.stringify(params.data)}`);
      case "ui/notifications/request-teardown":
        return void this.close("the app asked");
    }
  }

  async request(msg) {
    const params = msg.params || {};
    switch (msg.method) {
      case "ui/initialize":
        return this.reply(msg.id, { result: this.initializeResult(params) });
      case "ping":
        return this.reply(msg.id, { result: {} });
      case "tools/call": {
        // A tool the page does not list (a server may leave app-only tools out) is the server's to answer.
        const tool = state.tools.find((t) => t.name === params.name);
        if (tool && !appMayCall(tool)) {
          const why = `its _meta.ui.visibility is ${JSON.stringify(tool._meta.ui.visibility)}`;
          this.note("refused", `refused tools/call ${params.name}: ${why}`);
          return this.reply(msg.id, { error: { code: -32000, message: `The app may not call ${params.name}: ${why}` } });
        }
        return this.relay(msg);
      }
      case "resources/read":
        return this.relay(msg);
      case "ui/open-link":
        return this.openLink(msg);
      case "ui/message": {
        const text = (Array.isArray(params.content) ? params.content : [params.content]).map((c) => (c && c.type === "text" ? c.text : JSON.stringify(c))).join("\n");
        this.note("message", `message (${params.role || "user"}): ${text}`);
        return this.reply(msg.id, { result: {} });
      }
      case "ui/update-model-context":
        this.note("context", "model context: " + JSON.stringify(params));
        return this.reply(msg.id, { result: {} });
      case "ui/request-display-mode":
        return this.reply(msg.id, { result: { mode: "inline" } });
      default:
        return this.reply(msg.id, { error: { code: -32601, message: "Method not found: " + msg.method } });
    }
  }

  initializeResult(params) {
    const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    const version = params.protocolVersion === APPS_PROTOCOL ? params.protocolVersion : APPS_PROTOCOL;
    return {
      protocolVersion: version,
      hostInfo: { name: "protomcp-playground", version: "1" },
      hostCapabilities: {
        openLinks: {}, serverTools: {}, serverResources: {}, logging: {},
        sandbox: { ...(this.csp ? { csp: approved(this.csp) } : {}), ...(this.permissions ? { permissions: this.permissions } : {}) },
      },
      hostContext: {
        toolInfo: { id: this.call.id, tool: this.tool },
        theme: dark ? "dark" : "light",
        displayMode: "inline", availableDisplayModes: ["inline"],
        containerDimensions: { width: this.frameBox.clientWidth || 600, maxHeight: APP_MAX_HEIGHT },
        locale: navigator.language, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        userAgent: "protomcp-playground", platform: "web",
      },
    };
  }

  // The app's tools/call and resources/read go to the host on the page's session, with an id of
  // the page's (the app's ids are its own); the answer goes back with the app's id.
  relay(msg) {
    const id = ID_PREFIX + "a" + (++nextId);
    this.relays = this.relays || new Map();
    this.relays.set(id, msg.id);
    state.relays.set(id, this);
    return post({ jsonrpc: "2.0", id, method: msg.method, params: msg.params || {} });
  }
  relayed(response) {
    const appId = this.relays.get(response.id);
    this.relays.delete(response.id);
    const { id, ...answer } = response;
    this.reply(appId, answer);
  }

  openLink(msg) {
    let url;
    try { url = new URL(String((msg.params || {}).url)); } catch { url = null; }
    if (!url || !["http:", "https:"].includes(url.protocol)) {
      this.note("link", `refused to open ${(msg.params || {}).url}: not an http(s) URL`);
      return this.reply(msg.id, { error: { code: -32000, message: "Invalid URL" } });
    }
    const answer = (open) => {
      ask.querySelectorAll("button").forEach((b) => b.remove());
      ask.append(open ? " — opened" : " — denied");
      if (open) window.open(url.href, "_blank", "noopener,noreferrer");
      this.reply(msg.id, open ? { result: {} } : { error: { code: -32000, message: "Link opening denied by user" } });
    };
    const ask = h("div", { class: "app-event app-ask", "data-kind": "link" }, "The app asks to open ", h("code", {}, url.href), " ",
      h("button", { class: "primary", onclick: () => answer(true) }, "Open"), " ",
      h("button", { onclick: () => answer(false) }, "Deny"));
    this.log.append(ask);
  }

  // The spec's teardown: ask the app (ui/resource-teardown), wait a moment for its answer, then remove it.
  async close(reason) {
    if (this.closing) return;
    this.closing = true;
    if (this.initialized) {
      const id = "teardown-" + (++nextId);
      const answer = await new Promise((resolve) => {
        this.hostRequests.set(id, resolve);
        setTimeout(resolve, 3000);
        this.post({ jsonrpc: "2.0", id, method: "ui/resource-teardown", params: { reason } });
      });
      this.note("teardown", answer ? "teardown: the app answered" : "teardown: no answer from the app in 3 s");
    }
    this.closed = true;
    apps.delete(this);
    for (const id of (this.relays || new Map()).keys()) {
      state.relays.delete(id);
      const call = state.calls.get(id);
      if (call && !call.done) notify("notifications/cancelled", { requestId: id, reason: "the app was closed" }).catch(showError);
    }
    if (this.frame) this.frame.remove();
    this.frameBox.replaceChildren(h("div", { class: "desc" }, "app closed: " + reason));
  }
}

// ---- forms from JSON Schema ----------------------------------------------------------------------
function deref(schema, root) {
  let guard = 0;
  while (schema && schema.$ref && guard++ < 32) {
    let target = root;
    for (const part of schema.$ref.replace(/^#\//, "").split("/")) target = target && target[part];
    schema = { ...target, ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "$ref")) };
  }
  return schema || {};
}
function nullableInner(schema) {
  const alts = schema.anyOf || schema.oneOf;
  if (alts && alts.length === 2 && alts.some((s) => s.type === "null")) return alts.find((s) => s.type !== "null");
  if (Array.isArray(schema.type) && schema.type.includes("null") && schema.type.length === 2)
    return { ...schema, type: schema.type.find((t) => t !== "null") };
  return null;
}
function objectFields(schema, root, path, initial, required) {
  schema = deref(schema, root);
  const props = schema.properties || {};
  const req = new Set(schema.required || []);
  const children = Object.entries(props).map(([name, sub]) =>
    [name, field(sub, root, path ? path + "." + name : name, name, req.has(name), initial ? initial[name] : undefined)]);
  const el = h("div", { class: "object" }, children.map(([, f]) => f.el));
  return {
    el,
    get() {
      const out = {};
      for (const [name, f] of children) { const v = f.get(); if (v !== undefined) out[name] = v; }
      return !required && !Object.keys(out).length ? undefined : out;
    },
  };
}
function field(schema, root, path, label, required, initial, completion) {
  schema = deref(schema, root);
  const value = initial !== undefined ? initial : schema.default;
  const desc = schema.description ? h("div", { class: "desc" }, schema.description) : null;
  const title = h("label", { for: "f-" + path }, (schema.title && schema.title !== titleCase(label) ? schema.title : label) + (required ? " *" : ""));
  const inner = nullableInner(schema);
  if (inner) {
    const f = field({ ...inner, description: schema.description, default: schema.default }, root, path, label, required, value === null ? undefined : value, completion);
    const isNull = h("input", { type: "checkbox", "data-null": path, checked: value === null });
    return { el: h("div", { class: "field" }, f.el, h("label", {}, isNull, " null")), get: () => (isNull.checked ? null : f.get()) };
  }
  let input, get;
  if (schema.enum) {
    input = h("select", { id: "f-" + path, name: path },
      required ? null : h("option", { value: "" }, "—"),
      schema.enum.map((v, i) => h("option", { value: String(i), selected: JSON.stringify(v) === JSON.stringify(value) }, String(v))));
    get = () => (input.value === "" ? undefined : schema.enum[Number(input.value)]);
  } else if (schema.type === "boolean") {
    input = h("input", { type: "checkbox", id: "f-" + path, name: path, checked: !!value });
    get = () => input.checked;
  } else if (schema.type === "integer" || schema.type === "number") {
    input = h("input", { type: "number", id: "f-" + path, name: path, step: schema.type === "integer" ? 1 : "any", value: value ?? "",
      min: schema.minimum, max: schema.maximum });
    get = () => (input.value === "" ? (required ? 0 : undefined) : Number(input.value));
  } else if (schema.type === "string") {
    const list = completion ? h("datalist", { id: "dl-" + path }) : null;
    const text = h("input", { type: "text", id: "f-" + path, name: path, value: value ?? "", list: list ? "dl-" + path : undefined,
      placeholder: schema.format || "" });
    if (completion) {
      let timer;
      text.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => completion(text.value, list), 150); });
      text.addEventListener("focus", () => completion(text.value, list));
    }
    get = () => (text.value === "" && !required ? undefined : text.value);
    input = list ? h("span", {}, text, list) : text;
  } else if (schema.type === "object" && schema.properties) {
    const obj = objectFields(schema, root, path, value, required);
    return { el: h("fieldset", { class: "field", "data-field": path }, h("legend", {}, label + (required ? " *" : "")), desc, obj.el), get: obj.get };
  } else if (schema.type === "array" && schema.items) {
    const items = [];
    const box = h("div", { class: "items" });
    const add = (v) => {
      const f = field(schema.items, root, `${path}.${items.length}`, `#${items.length + 1}`, true, v);
      const row = h("div", { class: "array-item" }, f.el, h("button", { type: "button", onclick: () => { row.remove(); items.splice(items.indexOf(entry), 1); } }, "×"));
      const entry = { f, row };
      items.push(entry); box.append(row);
    };
    for (const v of Array.isArray(value) ? value : []) add(v);
    return {
      el: h("fieldset", { class: "field", "data-field": path }, h("legend", {}, label + (required ? " *" : "")), desc, box,
        h("button", { type: "button", class: "add", onclick: () => add(undefined) }, "+ add")),
      get: () => (items.length || required ? items.map((e) => e.f.get()) : undefined),
    };
  } else {
    input = h("textarea", { id: "f-" + path, name: path, rows: 3, placeholder: "JSON" }, value === undefined ? "" : JSON.stringify(value, null, 2));
    get = () => (input.value.trim() === "" ? undefined : JSON.parse(input.value));
  }
  return { el: h("div", { class: "field", "data-field": path }, title, desc, input), get };
}
function titleCase(s) { return String(s).replace(/_/g, " ").replace(/\b\w/g, (c) => c.toUpperCase()); }
function completer(ref, name, values) {
  if (!state.serverCaps.completions) return undefined;
  let latest = 0;
  return async (value, list) => {
    const mine = ++latest;
    try {
      const result = await request("completion/complete", { ref, argument: { name, value }, context: { arguments: values() } });
      if (mine !== latest) return;  // an answer to an older value: a newer one is on its way
      list.replaceChildren(...(result.completion.values || []).map((v) => h("option", { value: v })));
    } catch (err) { /* no completion for this argument */ }
  };
}

// ---- resources and prompts ------------------------------------------------------------------------
function renderResources() {
  const items = [
    ...state.resources.map((r) => ({ key: "r:" + r.uri, label: r.name || r.uri, sub: r.uri, resource: r })),
    ...state.templates.map((t) => ({ key: "t:" + t.uriTemplate, label: t.name || t.uriTemplate, sub: t.uriTemplate, template: t })),
  ];
  $("#resource-list").replaceChildren(...items.map((it) => h("button", {
    class: it.key === saved.resource ? "active" : "", onclick: () => { saved.resource = it.key; save(); renderResources(); },
  }, it.label, h("small", {}, it.sub))));
  const chosen = items.find((it) => it.key === saved.resource);
  const box = $("#resource-form");
  if (!chosen) return box.replaceChildren(h("p", {}, items.length ? "Pick a resource." : "No resources."));
  if (box.dataset.key === chosen.key) return;
  box.dataset.key = chosen.key;
  if (chosen.resource) {
    box.replaceChildren(h("div", { class: "card" }, h("h3", {}, chosen.label), h("code", {}, chosen.sub), " ",
      h("button", { class: "primary", onclick: () => read(chosen.sub) }, "Read")));
    return;
  }
  const template = chosen.template.uriTemplate;
  const names = [...template.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(",").map((n) => n.replace(/\*$/, "")));
  const fields = {};
  const values = () => Object.fromEntries(Object.entries(fields).map(([n, f]) => [n, f.get() || ""]));
  for (const n of names) fields[n] = field({ type: "string" }, {}, "tv-" + n, n, true, undefined,
    completer({ type: "ref/resource", uri: template }, n, values));
  box.replaceChildren(h("div", { class: "card" }, h("h3", {}, chosen.label), h("code", {}, template),
    Object.values(fields).map((f) => f.el),
    h("button", { class: "primary", onclick: () => {
      const v = values();
      read(template.replace(/\{[+#./;?&]?([^}]+)\}/g, (_, n) => n.split(",").map((x) => encodeURIComponent(v[x.replace(/\*$/, "")] || "")).join(",")));
    } }, "Read")));
}
async function read(uri, out = $("#reads")) {
  try {
    const result = await request("resources/read", { uri });
    out.prepend(h("div", { class: "card" }, h("h3", {}, uri), (result.contents || []).map(renderContents)));
  } catch (err) { out.prepend(h("div", { class: "card error-text" }, `${uri}: ${err.message}`)); }
}
function renderPrompts() {
  $("#prompt-list").replaceChildren(...state.prompts.map((p) => h("button", {
    class: p.name === saved.prompt ? "active" : "", onclick: () => { saved.prompt = p.name; save(); renderPrompts(); },
  }, p.title || p.name, h("small", {}, p.description || ""))));
  const prompt = state.prompts.find((p) => p.name === saved.prompt);
  const box = $("#prompt-form");
  if (!prompt) return box.replaceChildren(h("p", {}, state.prompts.length ? "Pick a prompt." : "No prompts."));
  if (box.dataset.key === prompt.name) return;
  box.dataset.key = prompt.name;
  const fields = {};
  const values = () => Object.fromEntries(Object.entries(fields).map(([n, f]) => [n, f.get() || ""]).filter(([, v]) => v));
  for (const a of prompt.arguments || []) fields[a.name] = field({ type: "string", description: a.description }, {}, "pa-" + a.name,
    a.name, !!a.required, undefined, completer({ type: "ref/prompt", name: prompt.name }, a.name, values));
  box.replaceChildren(h("div", { class: "card" }, h("h3", {}, prompt.title || prompt.name), Object.values(fields).map((f) => f.el),
    h("button", { class: "primary", onclick: async () => {
      const out = $("#prompt-results");
      try {
        const result = await request("prompts/get", { name: prompt.name, arguments: values() });
        out.prepend(h("div", { class: "card" }, h("h3", {}, prompt.name), result.description ? h("p", {}, result.description) : null,
          (result.messages || []).map((m) => h("div", {}, h("b", {}, m.role), renderBlock(m.content)))));
      } catch (err) { out.prepend(h("div", { class: "card error-text" }, err.message)); }
    } }, "Get")));
}

// ---- skills (the SEP-2640 extension) ----------------------------------------------------------------
function renderSkills() {
  $("#skill-list").replaceChildren(...state.skills.map((s) => h("button", {
    class: s.uri === saved.skill ? "active" : "", "data-skill": s.frontmatter.name,
    onclick: () => { saved.skill = s.uri; save(); renderSkills(); },
  }, s.frontmatter.name, h("small", {}, s.frontmatter.description || ""))));
  const skill = state.skills.find((s) => s.uri === saved.skill);
  const box = $("#skill-detail");
  if (!skill) {
    const none = (state.serverCaps.extensions || {})[SKILLS] ? "No skills." : "This server offers no skills (protomcp dev --skills DIR).";
    return box.replaceChildren(h("p", {}, state.skills.length ? "Pick a skill." : none));
  }
  const files = skill.resources === "dynamic" ? [] : skill.resources;
  box.replaceChildren(h("div", { class: "card" }, h("h3", {}, skill.frontmatter.name), h("code", {}, skill.uri),
    h("p", {}, skill.frontmatter.description || ""),
    h("div", { class: "tree" }, jsonTree(skill.frontmatter, "frontmatter")),
    h("table", { class: "files" }, files.map((f) => h("tr", {},
      h("td", {}, h("code", {}, f.uri)), h("td", {}, `${f.size} bytes`), h("td", {}, h("small", {}, f.digest.slice(0, 19) + "…")),
      h("td", {}, h("button", { onclick: () => read(f.uri, $("#skill-reads")) }, "Read")))))));
}

// ---- tasks -----------------------------------------------------------------------------------------
function renderTasks() {
  const tasks = [...state.tasks.values()].reverse();
  $("#task-list").replaceChildren(...(tasks.length ? tasks.map((t) => h("div", { class: "card", "data-task": t.taskId },
    h("h3", {}, t.tool || "task", " ", h("code", {}, t.taskId)),
    h("div", { class: "status" }, t.status, t.statusMessage ? " — " + t.statusMessage : ""),
    h("button", { onclick: async () => {
      const box = document.querySelector(`[data-task="${t.taskId}"] .task-result`);
      try { box.replaceChildren(renderResult(await request("tasks/result", { taskId: t.taskId }))); } catch (err) { box.textContent = err.message; }
    } }, "Result"), " ",
    ["working", "input_required"].includes(t.status) ? h("button", { onclick: () => request("tasks/cancel", { taskId: t.taskId }).then(refreshTasks, showError) }, "Cancel") : null,
    h("div", { class: "task-result" }))) : [h("p", {}, state.serverCaps.tasks ? "No tasks." : "This server offers no tasks.")]));
}

// ---- wire ------------------------------------------------------------------------------------------
function wireGroups(records) {
  const groups = new Map();
  const asked = new Map();  // server request id -> group of the call it belongs to
  for (const r of records) {
    const m = r.msg && typeof r.msg === "object" && !Array.isArray(r.msg) ? r.msg : {};
    const key = groupKey(r, m, asked);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  return [...groups.values()];
}
// A request, its response and everything related to it (progress, logs, the server's requests
// for it and their answers) form one group; ids are per session (over HTTP there may be several).
function groupKey(r, m, asked) {
  const session = r.session ? r.session + ":" : "";
  const has = (v) => v !== null && v !== undefined;
  let key;
  if (m.method && has(m.id) && r.dir === "out") {
    key = has(r.related) ? "id:" + r.related : "srv:" + m.id;
    asked.set(session + m.id, key);
  } else if (!m.method && has(m.id) && r.dir === "in" && asked.has(session + m.id)) key = asked.get(session + m.id);
  else if (has(m.id)) key = "id:" + m.id;
  else if (m.params && has(m.params.progressToken)) key = "id:" + m.params.progressToken;
  else if (m.params && has(m.params.requestId)) key = "id:" + m.params.requestId;
  else if (has(r.related)) key = "id:" + r.related;
  else return "seq:" + r.seq;
  return session + key;
}
function summary(r) {
  const m = r.msg;
  if (typeof m !== "object" || m === null) return String(m).slice(0, 80);
  if (Array.isArray(m)) return `batch of ${m.length}`;
  if (m.method) return m.method + (m.params && m.params.name ? " " + m.params.name : "");
  if (m.error) return `error ${m.error.code}: ${m.error.message}`;
  return "result";
}
function renderWire() {
  if (!$("#view-wire").classList.contains("active")) return;
  const which = document.querySelector("input[name=wire-session]:checked").value;
  const groups = wireGroups(state.wire[which]).slice(-200).reverse();
  $("#wire").replaceChildren(...groups.map((g) => {
    const first = g[0], last = g[g.length - 1];
    return h("details", { class: "wire-group", "data-session": which, "data-method": summary(first) },
      h("summary", {}, new Date(first.t).toLocaleTimeString(), first.session ? ` session ${first.session}` : "", "  ", summary(first), `  · ${g.length} message${g.length > 1 ? "s" : ""} · ${Math.round(last.t - first.t)} ms`),
      g.map((r) => h("details", { class: "wire-msg" }, h("summary", {},
        h("span", { class: "dir-" + r.dir }, r.dir === "in" ? "→ " : "← "), `+${Math.round(r.t - first.t)} ms  `, summary(r)),
      h("pre", {}, JSON.stringify(r.msg, null, 2)))));
  }));
}

// ---- events: reloads, load errors, crashes -----------------------------------------------------------
function lineDiff(a, b) {
  const x = a ? a.split("\n") : [], y = b ? b.split("\n") : [];
  const n = x.length, m = y.length;
  const lcs = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) { out.push(h("div", {}, "  " + x[i])); i++; j++; }
    else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) { out.push(h("div", { class: "add" }, "+ " + y[j])); j++; }
    else { out.push(h("div", { class: "del" }, "- " + x[i])); i++; }
  }
  return h("pre", { class: "diff" }, out);
}
function renderEvents() {
  const badge = $("#event-count");
  if ($("#view-events").classList.contains("active")) state.unseen = 0;
  badge.textContent = state.unseen ? String(state.unseen) : "";
  const cards = [];
  let output = [];
  const flush = () => { if (output.length) cards.push(h("div", { class: "card event output" }, h("pre", {}, output.join("\n")))); output = []; };
  for (const e of state.events.slice(-300)) {
    if (e.kind === "output") { output.push(`[${e.label}] ${e.line}`); continue; }
    flush();
    const when = new Date(e.t).toLocaleTimeString();
    if (e.kind === "loaded") {
      const parts = [["added", e.added], ["changed", e.changed], ["removed", e.removed]].filter(([, v]) => v.length);
      const head = h("h3", {}, `${when} ${e.initial ? "loaded" : "reloaded"} ${e.label}: ${Object.keys(e.tools).length} tools`);
      if (e.initial) { cards.push(h("div", { class: "card event loaded", "data-label": e.label }, head, Object.keys(e.tools).join(", "))); continue; }
      cards.push(h("div", { class: "card event loaded", "data-label": e.label }, head,
        parts.length ? parts.map(([k, v]) => h("div", { class: "diff-" + k }, `${k}: ${v.join(", ")}`)) : h("div", {}, "no change to the tool list"),
        e.added.map((name) => h("details", { "data-added": name }, h("summary", {}, "+ " + name), lineDiff("", JSON.stringify(e.tools[name], null, 2)))),
        e.changed.map((name) => h("details", { open: true, "data-changed": name }, h("summary", {}, "~ " + name), lineDiff(JSON.stringify(e.before[name], null, 2), JSON.stringify(e.tools[name], null, 2)))),
        e.removed.map((name) => h("div", { class: "del" }, "- " + name))));
    } else {
      cards.push(h("div", { class: "card event problem" }, h("h3", {}, when + " problem"), h("pre", { class: "error-text" }, e.message)));
    }
  }
  flush();
  $("#events").replaceChildren(...cards.reverse());
}

// ---- requests from the server, answered by the person ------------------------------------------------
function showNextAsk() {
  const dialog = $("#ask");
  if (dialog.open || !state.asks.size) return;
  const [id, msg] = state.asks.entries().next().value;
  const params = msg.params || {};
  dialog.dataset.id = String(id);
  let get = () => ({});
  if (msg.method === "roots/list") {  // the playground has no roots to offer
    state.asks.delete(id);
    post({ jsonrpc: "2.0", id, result: { roots: [] } }).catch(showError);
    return showNextAsk();
  }
  if (msg.method === "elicitation/create") {
    $("#ask-title").textContent = "The tool asks";
    $("#ask-message").textContent = params.message || "";
    const form = params.requestedSchema ? objectFields(params.requestedSchema, params.requestedSchema, "ask", undefined, true) : null;
    $("#ask-fields").replaceChildren(form ? form.el : "", params.url ? h("a", { href: params.url, target: "_blank" }, params.url) : "");
    get = () => (form ? form.get() : undefined);
  } else if (msg.method === "sampling/createMessage") {
    $("#ask-title").textContent = "The tool asks for a model's answer (you are the model)";
    $("#ask-message").replaceChildren(...(params.messages || []).map((m) => h("div", {}, h("b", {}, m.role + ": "), renderBlock(Array.isArray(m.content) ? m.content[0] : m.content))));
    const text = h("textarea", { id: "f-sample", name: "sample", rows: 4 });
    $("#ask-fields").replaceChildren(h("div", { class: "field" }, h("label", { for: "f-sample" }, "Answer"), text));
    get = () => text.value;
  } else {
    state.asks.delete(id);
    post({ jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } }).catch(showError);
    return showNextAsk();
  }
  dialog.onclose = () => {
    const action = dialog.returnValue;
    if (action === "dropped" || !state.asks.has(id)) return showNextAsk();
    state.asks.delete(id);
    let answer;
    if (msg.method === "sampling/createMessage") {
      answer = action === "accept"
        ? { result: { role: "assistant", content: { type: "text", text: get() }, model: "person-in-playground", stopReason: "endTurn" } }
        : { error: { code: -1, message: "The person declined the sampling request" } };
    } else {
      const result = { action: action || "cancel" };
      if (action === "accept") { const content = get(); if (content !== undefined) result.content = content; }
      answer = { result };
    }
    post({ jsonrpc: "2.0", id, ...answer }).catch(showError);
    setTimeout(showNextAsk, 0);
  };
  dialog.returnValue = "";
  dialog.showModal();
}

// ---- views -------------------------------------------------------------------------------------------
function show(view) {
  saved.view = view; save();
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll(".view")) s.classList.toggle("active", s.id === "view-" + view);
  schedule(renderAll);
}
function renderAll() { renderTools(); renderCalls(); renderResources(); renderPrompts(); renderSkills(); renderTasks(); renderWire(); renderEvents(); }

document.querySelectorAll("#tabs button").forEach((b) => b.addEventListener("click", () => show(b.dataset.view)));
document.querySelectorAll("input[name=wire-session]").forEach((r) => r.addEventListener("change", renderWire));
$("#refresh-tasks").addEventListener("click", () => refreshTasks().catch(showError));
show(saved.view || "tools");
connect();
