// The browser app: one conversation at a time and the event socket that keeps it and the list
// current. Everything the server says arrives as typed frames (dsh-protocol's ServerFrame and
// SessionUpdate); the page keeps a copy of the open session's items and the last seq it
// applied, so a reconnect asks for exactly what it missed.

import { element, renderItem, seconds, tokens, updateAnswer } from "./render.js";
import { renderTrajectory } from "./trajectory.js";
import { renderGoal, showGoal } from "./goal.js";
import { loadModels, send, showControls, startDemo, wireComposer } from "./composer.js";
import { $, boot, call, fail, state, toast } from "./core.js";
import { applyTheme, wireSettings } from "./settings.js";
import { refreshSessions, renderSessions } from "./sidebar.js";
import { refreshTrust, renderHero } from "./start-page.js";
import { showPlanChip } from "./plan.js";
import "./undo.js";

// ---- the conversation --------------------------------------------------------------------

function pinnedToBottom() {
  const scroller = $("conversation");
  return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
}

function renderDirty() {
  const open = state.open;
  if (!open) return;
  const pinned = pinnedToBottom();
  const list = $("items");
  for (const id of state.dirty) {
    const item = open.items.get(id);
    if (!item) continue;
    const old = list.querySelector(`[data-item="${CSS.escape(id)}"]`);
    if (old && item.kind === "assistant" && updateAnswer(old, item)) continue;
    const fresh = renderItem(item);
    if (old) {
      // A reasoning panel a person opened stays open.
      const wasOpen = old.querySelector("details")?.open;
      if (wasOpen && fresh.querySelector("details")) fresh.querySelector("details").open = true;
      if (old.tagName === "DETAILS" && old.open) fresh.open = true;
      old.replaceWith(fresh);
    } else list.append(fresh);
  }
  state.dirty.clear();
  if (pinned) $("conversation").scrollTop = $("conversation").scrollHeight;
  else $("jump").hidden = false;
}

// Chat or Trajectory: the timeline is read from the host when shown, and again (at most once a
// second) while the session moves.
let trajectoryTimer = null;
export function showView(view) {
  const trajectory = view === "trajectory";
  $("view-chat").setAttribute("aria-selected", String(!trajectory));
  $("view-trajectory").setAttribute("aria-selected", String(trajectory));
  $("items").hidden = trajectory;
  $("trajectory").hidden = !trajectory;
  if (trajectory) refreshTrajectory();
}

function refreshTrajectory() {
  if (!state.open || $("trajectory").hidden || trajectoryTimer) return;
  trajectoryTimer = setTimeout(() => (trajectoryTimer = null), 1000);
  call("session.trajectory", { sessionId: state.open.id })
    .then((trajectory) => {
      if (trajectory.sessionId !== state.open?.id) return;
      renderTrajectory($("trajectory"), trajectory, (callId) => {
        showView("chat");
        const card = document.querySelector(`#items [data-item="${CSS.escape(callId)}"]`);
        if (!card) return;
        card.open = true;
        card.scrollIntoView({ block: "center" });
      });
    })
    .catch((error) => fail(error));
}

// Under the composer: what the session cost so far, and the share of its input the provider
// read from its cache (what makes a long session cheap).
function renderStats(stats) {
  const line = $("stats");
  if (!stats || !stats.steps) {
    line.hidden = true;
    return;
  }
  const cached = stats.inputTokens ? Math.round((stats.cacheReadTokens / stats.inputTokens) * 100) : 0;
  const parts = [
    `${stats.turns} ${stats.turns === 1 ? "turn" : "turns"}`,
    `${stats.steps} ${stats.steps === 1 ? "step" : "steps"}`,
    `model ${seconds(stats.modelMs)}`,
    `tools ${seconds(stats.toolMs)}`,
    `cache hit ${cached}%`,
    `${tokens(stats.inputTokens)} in · ${tokens(stats.outputTokens)} out`,
  ];
  line.textContent = parts.join(" · ");
  line.title = `${stats.cacheReadTokens} of ${stats.inputTokens} input tokens were read from the provider's cache`;
  line.hidden = false;
}

// The conversation follows the newest message unless the person scrolled up to read; then a
// button brings them back.
export function followLatest() {
  const scroller = $("conversation");
  scroller.scrollTop = scroller.scrollHeight;
  $("jump").hidden = true;
}

function wireScroll() {
  $("conversation").addEventListener("scroll", () => {
    if (pinnedToBottom()) $("jump").hidden = true;
  });
  $("jump").addEventListener("click", followLatest);
}

// Below 900 px the session list is a drawer: opened from the top bar, closed by the scrim,
// Escape, or choosing what to open.
function setDrawer(open) {
  document.querySelector(".app").classList.toggle("drawer-open", open);
  $("scrim").hidden = !open;
  $("menu").setAttribute("aria-expanded", String(open));
  if (open) $("search").focus();
}

// A pending approval is answered by key where nothing is being typed: Y allows once, S allows
// for the session, N rejects (the card's buttons say so).
function wireApprovalKeys() {
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest?.("input, textarea, select, [contenteditable]")) return;
    const card = document.querySelector("#items .approval.pending");
    if (!card) return;
    const button = { y: ".allow", s: ".allow-session", n: ".reject" }[event.key.toLowerCase()];
    if (!button || !card.querySelector(button)) return;
    event.preventDefault();
    card.querySelector(button).click();
  });
}

function wireDrawer() {
  $("menu").addEventListener("click", () => setDrawer(!document.querySelector(".app").classList.contains("drawer-open")));
  $("scrim").addEventListener("click", () => setDrawer(false));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && document.querySelector(".app").classList.contains("drawer-open")) setDrawer(false);
  });
}

let frameRequested = false;
export function markDirty(id) {
  state.dirty.add(id);
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(() => {
      frameRequested = false;
      renderDirty();
    });
  }
}

// Items an append or blocks op named that this page did not hold, each re-read once.
const reread = new Set();

// Applies an update's ops; answers the id of an item an op named that the page does not hold
// (its text so far is missing here, so the session is read again rather than shown wrong).
function applyOps(ops) {
  const open = state.open;
  let missing = null;
  for (const op of ops) {
    if (op.op === "upsert") {
      if (!open.items.has(op.item.id)) open.order.push(op.item.id);
      open.items.set(op.item.id, op.item);
      markDirty(op.item.id);
    } else if (op.op === "append") {
      const item = open.items.get(op.itemId);
      if (!item) {
        missing = op.itemId;
        continue;
      }
      item[op.field] = (item[op.field] || "") + op.text;
      // Shown after the blocks until a blocks op renders it (none comes while a long tail
      // stays open).
      if (op.field === "text") item.rawTail = (item.rawTail || "") + op.text;
      markDirty(op.itemId);
    } else if (op.op === "blocks") {
      const item = open.items.get(op.itemId);
      if (!item) {
        missing = op.itemId;
        continue;
      }
      item.blocks = [...(item.blocks || []).slice(0, op.from), ...op.blocks];
      item.rawTail = "";
      markDirty(op.itemId);
    }
  }
  return missing;
}

// Messages waiting for the agent: queued turns, and steering for the running turn. A queued
// turn can be moved into the running turn, edited in place or removed; a steering message can
// be removed until the loop takes it at its next step.
// A row being edited stays as it is while its message is still queued: every change of the
// queue (a removal, another client, the loop taking a steering message) renders it anew, and
// the person's unsaved edit must not vanish with it.
function renderQueue(queue) {
  const editing = new Map(
    [...$("queue").querySelectorAll(".queue-row.editing")].map((row) => [row.dataset.messageId, row]),
  );
  const rows = [
    ...queue.nextStep.map((message) => ["steering", message]),
    ...queue.nextTurn.map((message) => ["queued", message]),
  ];
  $("queue").replaceChildren(...rows.map(([kind, message]) => {
    const kept = kind === "queued" ? editing.get(message.id) : undefined;
    if (!kept) return queueRow(kind, message);
    kept.latestMessage = message;
    return kept;
  }));
  $("queue").hidden = rows.length === 0;
}

const messageText = (message) => message.content.filter((block) => block.type === "text").map((block) => block.text).join("");

function updateQueue(itemId, action, extra = {}) {
  return call("session.updateQueue", { sessionId: state.open.id, itemId, action, ...extra }).catch((e) => fail(e));
}

function queueRow(kind, message) {
  const button = (label, onClick) => {
    const node = element("button", { type: "button", class: "queued-action" }, label);
    node.addEventListener("click", onClick);
    return node;
  };
  const body = element("span", { class: "queued-text" }, messageText(message));
  const actions = element("span", { class: "queued-actions" });
  if (kind === "queued") actions.append(button("Steer", () => updateQueue(message.id, "steer")));
  if (kind === "queued") actions.append(button("Edit", () => editQueued(row, message)));
  actions.append(button("Remove", () => updateQueue(message.id, "remove")));
  const row = element("div", { class: `queue-row ${kind}`, "data-message-id": message.id }, element("span", { class: "queued-kind" }, kind), body, actions);
  return row;
}

function editQueued(row, message) {
  const editor = element("textarea", { class: "queued-editor", rows: "2", "aria-label": "Edit the queued message" });
  editor.value = messageText(message);
  const save = element("button", { type: "button", class: "queued-action" }, "Save");
  const cancel = element("button", { type: "button", class: "queued-action" }, "Cancel");
  save.addEventListener("click", () => {
    const text = editor.value.trim();
    if (!text) return;
    // Saved: the queue's next frame shows the row with its new text.
    row.classList.remove("editing");
    updateQueue(message.id, "edit", { content: [{ type: "text", text }] });
  });
  cancel.addEventListener("click", () => row.replaceWith(queueRow("queued", row.latestMessage ?? message)));
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); save.click(); }
    if (event.key === "Escape") { event.stopPropagation(); cancel.click(); }
  });
  row.classList.add("editing");
  row.replaceChildren(element("span", { class: "queued-kind" }, "editing"), editor, element("span", { class: "queued-actions" }, save, cancel));
  editor.focus();
}

function setRunning(running) {
  state.open.running = running;
  $("composer").classList.toggle("running", running);
  $("cancel").hidden = !running;
  $("send").textContent = running ? "Queue" : "Send";
  $("steer").hidden = !running;
}

// The context bar: the latest request's tokens against the model's window.
async function refreshContext() {
  if (!state.open) return;
  const id = state.open.id;
  const meter = await call("session.context", { sessionId: id });
  if (state.open?.id !== id) return;
  renderContext(meter);
}

function renderContext({ tokens, window, cacheHitTokens }) {
  const meter = $("context-meter");
  meter.hidden = !(tokens && window);
  if (meter.hidden) return;
  const share = Math.min(100, (tokens * 100) / window);
  $("context-fill").style.width = `${share}%`;
  meter.classList.toggle("high", share >= 80);
  $("context-text").textContent = `${share.toFixed(share < 10 ? 1 : 0)}% of ${window >= 1000 ? `${Math.round(window / 1000)}k` : window}`;
  meter.title = `${tokens} of ${window} tokens${cacheHitTokens ? `; ${cacheHitTokens} of the latest request's served from the provider's cache` : ""}`;
}

// The session's background jobs: a chip saying how many run, opening their list; a running
// one can be stopped (as job_kill would).
function renderJobs(jobs) {
  const box = $("jobs");
  box.hidden = !jobs || jobs.length === 0;
  if (box.hidden) return;
  const running = jobs.filter((job) => job.status === "running" || job.status === "stopping").length;
  box.classList.toggle("running", running > 0);
  $("jobs-summary").textContent = running > 0 ? `${running} of ${jobs.length} jobs running` : `${jobs.length} jobs done`;
  $("jobs-list").replaceChildren(
    ...jobs.map((job) =>
      element(
        "li",
        { class: `job job-${job.status}`, "data-job": job.id },
        element("span", { class: "job-id" }, job.id),
        element("span", { class: "job-label", title: job.label }, job.label),
        element("span", { class: "job-status" }, job.detail ? `${job.status}, ${job.detail}` : job.status),
        job.status === "running"
          ? element(
              "button",
              {
                type: "button",
                class: "secondary danger stop-job",
                onclick: () => call("session.killJob", { sessionId: state.open.id, jobId: job.id }).catch((e) => fail(e)),
              },
              "Stop",
            )
          : null,
      ),
    ),
  );
}

function renderHeader() {
  const open = state.open;
  const title = $("title");
  title.textContent = open ? open.title || `Session ${open.id.slice(0, 8)}` : "";
  // The preset is named unless it is the plain agent.
  if (open?.agentPreset && open.agentPreset !== "standard") {
    title.append(" ", element("span", { class: "fork-mark preset-mark", title: "Agent preset" }, open.agentPreset));
  }
}

function closeSession() {
  state.open = null;
  $("chat").hidden = true;
  $("hero").hidden = false;
  if (location.hash) window.history.pushState(null, "", location.pathname);
  renderSessions();
}

export async function fork(itemId) {
  const { sessionId } = await call("session.fork", { sessionId: state.open.id, itemId });
  await refreshSessions();
  await openSession(sessionId);
}

// A session opens on its newest items, enough to fill a tall screen; earlier ones come when
// asked for, so a long session paints as fast as a short one.
const FIRST_PAGE = 60;

// `prefetched`: the history when it was already asked for (the first paint).
export async function openSession(id, prefetched = null) {
  const history = prefetched || (await call("session.history", { sessionId: id, limit: FIRST_PAGE }));
  const listed = state.sessions.find((session) => session.id === id);
  state.open = { id, items: new Map(), order: [], lastSeq: history.lastSeq, running: history.running, title: history.title, agentPreset: listed?.agentPreset };
  for (const item of history.items) {
    state.open.items.set(item.id, item);
    state.open.order.push(item.id);
  }
  $("hero").hidden = true;
  $("chat").hidden = false;
  const list = $("items");
  list.replaceChildren(...history.items.map((item) => renderItem(item)));
  if (history.earlier > 0) list.prepend(earlierButton(id, history));
  renderHeader();
  renderQueue({ nextTurn: [], nextStep: [] });
  renderJobs([]);
  showGoal(id);
  $("preset").value = history.preset || "workspace-write";
  showPlanChip(history.planMode);
  renderStats(history.stats);
  showView("chat");
  setRunning(history.running);
  renderSessions();
  subscribe();
  loadModels(id).catch(() => {});
  refreshContext().catch(() => {});
  followLatest();
  setDrawer(false);
  $("prompt").focus();
  // Each session opened is an entry of the browser's history, so Back and Forward move
  // between them; a restore of the same one replaces its entry.
  if (location.hash.slice(1) !== id) window.history.pushState(null, "", `#${id}`);
}

// The button above a session's first shown item: the next page of earlier ones, kept in view
// where the reader was.
function earlierButton(id, history) {
  const button = element("button", { type: "button", class: "link earlier" }, `Show ${Math.min(history.earlier, 200)} earlier of ${history.earlier}`);
  button.addEventListener("click", async () => {
    const shown = state.open?.order.length || 0;
    try {
      const more = await call("session.history", { sessionId: id, limit: shown + 200 });
      if (state.open?.id !== id) return;
      const scroller = $("conversation");
      const fromBottom = scroller.scrollHeight - scroller.scrollTop;
      const known = new Set(state.open.order);
      const older = more.items.filter((item) => !known.has(item.id));
      for (const item of older) state.open.items.set(item.id, item);
      state.open.order = [...older.map((item) => item.id), ...state.open.order];
      button.replaceWith(...(more.earlier > 0 ? [earlierButton(id, more)] : []), ...older.map((item) => renderItem(item)));
      scroller.scrollTop = scroller.scrollHeight - fromBottom;
    } catch (error) {
      fail(error);
    }
  });
  return button;
}

// ---- the event socket --------------------------------------------------------------------

function subscribe() {
  const socket = state.socket;
  if (!socket || socket.readyState !== WebSocket.OPEN || !state.open) return;
  socket.send(JSON.stringify({ type: "subscribe", sessionId: state.open.id, afterSeq: state.open.lastSeq }));
}

function onFrame(frame) {
  switch (frame.type) {
    case "session/update":
      if (!state.open || frame.sessionId !== state.open.id) return;
      if (state.open.lastSeq !== null && state.open.lastSeq !== undefined && frame.seq <= state.open.lastSeq) return;
      state.open.lastSeq = frame.seq;
      {
        const missing = applyOps(frame.ops);
        if (missing && !reread.has(missing)) {
          reread.add(missing);
          openSession(state.open.id).catch((e) => fail(e));
          return;
        }
      }
      if (frame.running !== undefined) setRunning(frame.running);
      if (frame.stats) {
        renderStats(frame.stats);
        refreshTrajectory();
      }
      if (frame.title) {
        state.open.title = frame.title;
        renderHeader();
        refreshSessions().catch(() => {});
      }
      break;
    case "session/subscribed":
      break;
    case "session/projection":
      if (state.open && frame.sessionId === state.open.id && frame.key === "context") renderContext(frame.value);
      if (state.open && frame.sessionId === state.open.id && frame.key === "jobs") renderJobs(frame.value);
      if (state.open && frame.sessionId === state.open.id && frame.key === "controls") showControls(frame.value);
      if (frame.key === "goal") renderGoal(frame.sessionId, frame.value);
      break;
    case "session/queue":
      if (state.open && frame.sessionId === state.open.id) renderQueue(frame.queue);
      break;
    case "session/resync":
      if (state.open && frame.sessionId === state.open.id) openSession(state.open.id).catch((e) => fail(e));
      break;
    case "host/session-added":
      refreshSessions().catch(() => {});
      break;
    case "host/session-removed":
      if (state.open?.id === frame.sessionId) closeSession();
      refreshSessions().catch(() => {});
      break;
    case "host/session-waiting": {
      // The frame is newer than any listing still on its way, so it wins over the listing.
      state.waiting.set(frame.sessionId, frame.waiting);
      if (state.sessions.some((s) => s.id === frame.sessionId)) renderSessions();
      else refreshSessions().catch(() => {});
      break;
    }
    case "host/session-status":
      if (frame.running) state.running.add(frame.sessionId);
      else state.running.delete(frame.sessionId);
      // A turn started or ended: the session had activity (and may have a title now).
      refreshSessions().catch(() => renderSessions());
      break;
    case "heartbeat":
      if (frame.bootId !== state.bootId) window.location.reload();
      break;
    case "stream/error":
      toast(frame.message);
      break;
  }
}

function connect() {
  const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/events`);
  state.socket = socket;
  socket.addEventListener("open", () => {
    state.retry = 0;
    $("connection").hidden = true;
    subscribe();
  });
  socket.addEventListener("message", (event) => onFrame(JSON.parse(event.data)));
  socket.addEventListener("close", () => {
    if (state.signedOut) return;
    $("connection").hidden = false;
    const delay = Math.min(10000, 250 * 2 ** state.retry++);
    // A socket refused again and again may be a sign-in the host no longer takes: ask it
    // once per retry with a plain call, which says so (401) where the socket cannot.
    if (state.retry > 1) call("host.describe").catch(() => {});
    setTimeout(() => {
      if (!state.signedOut) connect();
    }, delay);
  });
}


// ---- start -------------------------------------------------------------------------------

// The address names the open session: Back, Forward and a `#id` typed in the address bar
// open it (or the start page for none).
function wireNavigation() {
  $("signed-out-retry").addEventListener("click", () => location.reload());
  window.addEventListener("popstate", () => {
    const wanted = location.hash.slice(1);
    if (!wanted) {
      if (state.open) closeSession();
      return;
    }
    if (state.open?.id === wanted) return;
    if (state.sessions.some((s) => s.id === wanted)) openSession(wanted).catch((e) => fail(e));
    else toast(`No session ${wanted} here.`);
  });
}

async function start() {
  applyTheme(localStorage.getItem("dsh-theme") || "system");
  wireComposer();
  wireSettings();
  wireScroll();
  wireDrawer();
  wireApprovalKeys();
  wireNavigation();
  // What the first paint needs is asked at once, the addressed session's history included,
  // not one call after another; the event socket opens beside them (it subscribes whatever
  // session is open by the time it is up).
  const wanted = location.hash.slice(1);
  const history = wanted ? call("session.history", { sessionId: wanted, limit: FIRST_PAGE }).catch(() => null) : null;
  // The host's description comes with the page; asked only when it did not.
  const described = boot.host ? Promise.resolve(boot.host) : call("host.describe");
  connect();
  // An addressed session loads its own models when it opens; the default ones otherwise.
  const models = wanted ? Promise.resolve() : loadModels().catch(() => {});
  const ready = Promise.all([described, refreshTrust(), refreshSessions(), models]);
  // The addressed session paints as soon as its history is here (an answered history means
  // the session exists): the list and the start page fill in beside it.
  const first = history ? await history : null;
  if (first) await openSession(wanted, first);
  else if (wanted) loadModels().catch(() => {});
  const [host] = await ready;
  state.host = host;
  renderHero(host);
}

start().catch((error) => toast(error.message || String(error)));
