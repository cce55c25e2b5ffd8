// The browser app: the session list, one conversation at a time, the composer, and the event
// socket that keeps both current. Everything the server says arrives as typed frames
// (dsh-protocol's ServerFrame and SessionUpdate); the page keeps a copy of the open session's
// items and the last seq it applied, so a reconnect asks for exactly what it missed.

import { element, inspection, renderItem, seconds, tokens, updateAnswer } from "./render.js";
import { wireMentions } from "./mentions.js";
import { showMenu } from "./menu.js";
import { wireDrop } from "./drop.js";
import { renderTrajectory } from "./trajectory.js";

const boot = JSON.parse(document.getElementById("boot").textContent);
const state = {
  host: null,
  sessions: [],
  running: new Set(),
  open: null, // { id, items: Map, order: [], lastSeq, running, title }
  socket: null,
  bootId: boot.bootId,
  dirty: new Set(),
  retry: 0,
  showArchived: false,
  hits: null, // Map of session id to its search hit, while the messages are searched
};

let rpcCount = 0;
async function call(method, payload = {}) {
  const rpcId = `r${++rpcCount}`;
  const response = await fetch(`/api/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-dsh-csrf": boot.csrf },
    body: JSON.stringify({ type: "client-request", rpcId, method, payload }),
  });
  if (response.status === 401) {
    signedOut();
    throw new Error("This page is no longer signed in.");
  }
  if (!response.ok) throw new Error(`${method}: HTTP ${response.status}: ${await response.text()}`);
  const body = await response.json();
  if (!body.result.ok) {
    // The words are for the person; the code stays at hand (on hover) for a bug report.
    const { code, message } = body.result.error;
    const error = new Error(message);
    error.code = code;
    throw error;
  }
  return body.result.value;
}

const $ = (id) => document.getElementById(id);

// The host no longer takes this page's sign-in (it restarted without keeping it, or its secrets
// were replaced): say so and how to get back in, instead of reconnecting forever.
function signedOut() {
  if (state.signedOut) return;
  state.signedOut = true;
  state.socket?.close();
  $("connection").hidden = true;
  const notice = $("signed-out");
  notice.hidden = false;
  notice.querySelector("button").focus();
}

// A failed call, told in the words of its message with its code on hover.
function fail(error) {
  toast(error.message || String(error), error.code);
}

function toast(message, code, action, millis = 8000) {
  const area = $("toasts");
  const note = element("div", { class: "toast", role: "alert", title: code || null }, message, action || null);
  area.append(note);
  setTimeout(() => note.remove(), millis);
  return note;
}

// ---- theme -------------------------------------------------------------------------------

function applyTheme(theme) {
  if (theme === "system") document.documentElement.removeAttribute("data-theme");
  else document.documentElement.dataset.theme = theme;
  $("theme").textContent = { system: "◐", light: "☀", dark: "☾" }[theme];
  $("theme").title = `Theme: ${theme}`;
}
function setTheme(theme) {
  localStorage.setItem("dsh-theme", theme);
  applyTheme(theme);
  for (const radio of document.querySelectorAll('input[name="theme"]')) radio.checked = radio.value === theme;
}
function cycleTheme() {
  const order = ["system", "light", "dark"];
  setTheme(order[(order.indexOf(localStorage.getItem("dsh-theme") || "system") + 1) % 3]);
}

// What Enter does while a turn runs: queue the prompt for the next turn (the default) or steer
// the running one.
function enterWhileBusy() {
  return localStorage.getItem("dsh-enter-busy") === "steer" ? "steer" : "queue";
}

// ---- the session list --------------------------------------------------------------------

function when(millis) {
  const date = new Date(millis);
  return date.toDateString() === new Date().toDateString()
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
}

// Searching the messages asks the host (which reads the stored logs) once the typing pauses;
// until it answers, the titles that match are shown.
let searchTimer = null;
function searchChanged() {
  clearTimeout(searchTimer);
  state.hits = null;
  renderSessions();
  const query = $("search").value.trim();
  if (!$("search-text").checked || query.length < 2) return;
  searchTimer = setTimeout(async () => {
    try {
      const { hits } = await call("session.search", { query });
      if ($("search").value.trim() !== query || !$("search-text").checked) return;
      state.hits = new Map(hits.map((hit) => [hit.sessionId, hit]));
      renderSessions();
    } catch (error) {
      fail(error);
    }
  }, 250);
}

function renderSessions() {
  const list = $("sessions");
  const needle = $("search").value.trim().toLowerCase();
  const hits = state.hits;
  // A subagent's session is read under its parent's tool card, not listed as a conversation; a
  // session no one has written in yet is not a conversation either. Newest activity first:
  // opening or renaming a session is no activity.
  const matches = (s) => !needle || (s.title || s.id).toLowerCase().includes(needle) || hits?.has(s.id);
  const archived = state.sessions.filter((s) => s.archived && !s.subagentOf && s.activeAt).length;
  const shown = state.sessions
    .filter((s) => !s.subagentOf && (s.activeAt || s.broken) && matches(s) && (!s.archived || state.showArchived || hits?.has(s.id)))
    .sort((a, b) => (b.activeAt || b.updatedAt) - (a.activeAt || a.updatedAt));
  list.replaceChildren();
  if (shown.length === 0) {
    const nothing = !needle ? "No conversations yet." : $("search-text").checked ? (hits ? "Nothing matches." : "Searching…") : "No title matches.";
    list.append(element("p", { class: "muted pad" }, nothing));
    list.append(archivedToggle(archived));
    return;
  }
  const groups = new Map();
  for (const session of shown) {
    const key = session.cwd || "(no directory)";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(session);
  }
  for (const [cwd, members] of groups) {
    const group = element("section", { class: "group" }, element("h2", { title: cwd }, cwd));
    for (const session of members) {
      if (session.broken) {
        // A stored session whose file does not read: listed, with why, so it hides no other;
        // it cannot be opened.
        group.append(
          element(
            "div",
            { class: "session broken", title: session.broken },
            element("span", { class: "dot" }),
            element("span", { class: "title" }, `Broken: ${session.id}`),
            element("span", { class: "when" }, "unreadable"),
          ),
        );
        continue;
      }
      const running = state.running.has(session.id);
      // A session waiting for a person outranks one that is merely running.
      const dot = session.waiting
        ? element("span", { class: "dot waiting", title: "Waiting for your answer", "aria-label": "waiting for your answer" })
        : element("span", { class: running ? "dot live" : "dot", "aria-label": running ? "running" : null });
      const row = element(
        "button",
        {
          class: state.open?.id === session.id ? "session current" : "session",
          title: session.id,
          onclick: () => openSession(session.id),
        },
        dot,
        session.forkOf ? forkMark(session.forkOf) : null,
        session.archived ? element("span", { class: "fork-mark" }, "archived") : null,
        element("span", { class: "title" }, session.title || `Session ${session.id.slice(0, 8)}`),
        element("span", { class: "when" }, when(session.activeAt)),
        hits?.has(session.id) ? element("span", { class: "hit" }, hits.get(session.id).snippet) : null,
      );
      const more = element("button", {
        type: "button",
        class: "row-menu",
        "aria-label": `More for ${session.title || session.id}`,
        "aria-haspopup": "menu",
        "aria-expanded": "false",
      }, "⋯");
      more.addEventListener("click", (event) => {
        event.stopPropagation();
        showMenu(more, "Session", sessionActions(session));
      });
      group.append(element("div", { class: "session-row" }, row, more));
    }
    list.append(group);
  }
  list.append(archivedToggle(archived));
}

// Under the list: archived sessions, hidden until asked for.
function archivedToggle(count) {
  if (!count) return "";
  return element(
    "button",
    {
      type: "button",
      class: "link archived-toggle",
      onclick: () => {
        state.showArchived = !state.showArchived;
        renderSessions();
      },
    },
    state.showArchived ? "Hide archived" : `Show archived (${count})`,
  );
}

// What a session's "⋯" menu offers (the row's and the header's).
function sessionActions(session) {
  const opened = async () => {
    if (state.open?.id !== session.id) await openSession(session.id);
  };
  const run = (work) => () => work().catch((error) => fail(error));
  return [
    { label: "Rename", run: run(async () => { await opened(); renameInline(); }) },
    { label: "Fork", run: run(async () => { await opened(); await fork(undefined); }) },
    { label: session.archived ? "Unarchive" : "Archive", run: run(() => archive(session, !session.archived)) },
    { label: "Delete", danger: true, run: run(async () => { await opened(); await deleteWithUndo(); }) },
  ];
}

async function archive(session, archived) {
  await call("session.archive", { sessionId: session.id, archived });
  await refreshSessions();
  if (!archived) return;
  const undo = element("button", { type: "button", class: "link toast-action" }, "Undo");
  const note = toast(`Archived “${session.title || session.id.slice(0, 8)}”. `, undefined, undo, 8000);
  undo.addEventListener("click", () => {
    note.remove();
    archive(session, false).catch((error) => fail(error));
  });
}

// A fork says so, and of what, so it does not pass for its original.
function forkMark(parentId) {
  const parent = state.sessions.find((s) => s.id === parentId);
  const name = parent?.title || `session ${parentId.slice(0, 8)}`;
  return element("span", { class: "fork-mark", title: `Forked from ${name}` }, "fork");
}

async function refreshSessions() {
  const { sessions } = await call("session.list");
  state.sessions = sessions;
  renderSessions();
}

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
function showView(view) {
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
function followLatest() {
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
function markDirty(id) {
  state.dirty.add(id);
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(() => {
      frameRequested = false;
      renderDirty();
    });
  }
}

function applyOps(ops) {
  const open = state.open;
  for (const op of ops) {
    if (op.op === "upsert") {
      if (!open.items.has(op.item.id)) open.order.push(op.item.id);
      open.items.set(op.item.id, op.item);
      markDirty(op.item.id);
    } else if (op.op === "append") {
      const item = open.items.get(op.itemId);
      if (!item) continue;
      item[op.field] = (item[op.field] || "") + op.text;
      markDirty(op.itemId);
    } else if (op.op === "blocks") {
      const item = open.items.get(op.itemId);
      if (!item) continue;
      item.blocks = [...(item.blocks || []).slice(0, op.from), ...op.blocks];
      markDirty(op.itemId);
    }
  }
}

// Messages waiting for the agent: queued turns, and steering for the running turn. A queued
// turn can be moved into the running turn, edited in place or removed; a steering message can
// be removed until the loop takes it at its next step.
function renderQueue(queue) {
  const rows = [
    ...queue.nextStep.map((message) => ["steering", message]),
    ...queue.nextTurn.map((message) => ["queued", message]),
  ];
  $("queue").replaceChildren(...rows.map(([kind, message]) => queueRow(kind, message)));
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
    updateQueue(message.id, "edit", { content: [{ type: "text", text }] });
  });
  cancel.addEventListener("click", () => row.replaceWith(queueRow("queued", message)));
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); save.click(); }
    if (event.key === "Escape") { event.stopPropagation(); cancel.click(); }
  });
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
  $("title").textContent = open ? open.title || `Session ${open.id.slice(0, 8)}` : "";
}

function closeSession() {
  state.open = null;
  $("chat").hidden = true;
  $("hero").hidden = false;
  if (location.hash) window.history.pushState(null, "", location.pathname);
  renderSessions();
}

async function fork(itemId) {
  const { sessionId } = await call("session.fork", { sessionId: state.open.id, itemId });
  await refreshSessions();
  await openSession(sessionId);
}

// A session opens on its newest items, enough to fill a tall screen; earlier ones come when
// asked for, so a long session paints as fast as a short one.
const FIRST_PAGE = 60;

// `prefetched`: the history when it was already asked for (the first paint).
async function openSession(id, prefetched = null) {
  const history = prefetched || (await call("session.history", { sessionId: id, limit: FIRST_PAGE }));
  state.open = { id, items: new Map(), order: [], lastSeq: history.lastSeq, running: history.running, title: history.title };
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
  $("preset").value = history.preset || "workspace-write";
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
      applyOps(frame.ops);
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
      const session = state.sessions.find((s) => s.id === frame.sessionId);
      if (session) session.waiting = frame.waiting;
      renderSessions();
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

// ---- the composer ------------------------------------------------------------------------

async function loadModels(sessionId) {
  const { models, current } = await call("session.models", sessionId ? { sessionId } : {});
  const select = $("model");
  select.replaceChildren(
    ...models.map((model) => element("option", { value: model.route, selected: model.route === current }, model.label)),
  );
  if (current && !models.some((model) => model.route === current)) {
    select.prepend(element("option", { value: current, selected: true }, current));
  }
  // Endpoints serve models no catalog lists (Ollama, vLLM): any id of a provider can be typed.
  if (models.length) select.append(element("option", { value: OTHER_MODEL }, "Other model…"));
  select.hidden = select.options.length === 0;
}

const OTHER_MODEL = "\u0000other";

// "Other model…": the picker becomes a text box for `PROVIDER/MODEL`; Enter applies it,
// Escape gives the picker back.
function askOtherModel() {
  const select = $("model");
  const provider = (state.lastModel || select.options[0]?.value || "").split("/")[0];
  const box = element("input", {
    type: "text",
    class: "model-box",
    value: provider ? `${provider}/` : "",
    "aria-label": "Model, as PROVIDER/MODEL",
    placeholder: "provider/model-id",
  });
  const done = async (apply) => {
    box.remove();
    select.hidden = false;
    if (apply && box.value.includes("/") && state.open) {
      try {
        await call("session.selectModel", { sessionId: state.open.id, model: box.value.trim() });
      } catch (error) {
        fail(error);
      }
    }
    await loadModels(state.open?.id).catch(() => {});
  };
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      done(true);
    } else if (event.key === "Escape") {
      event.preventDefault();
      done(false);
    }
  });
  select.hidden = true;
  select.after(box);
  box.focus();
}

// The model and permission controls show the open session's state, whoever changed it.
function showControls({ model, preset }) {
  if (preset) $("preset").value = preset;
  if (model) {
    const select = $("model");
    if (![...select.options].some((option) => option.value === model)) {
      select.prepend(element("option", { value: model }, model));
    }
    select.value = model;
    select.hidden = false;
  }
}

// "+ New session" starts from the host's defaults, not from what the last session was switched
// to; a first prompt typed on the start page takes the choices made there.
async function newSession({ chosen = false } = {}) {
  const model = chosen ? $("model").value || undefined : undefined;
  const preset = chosen ? $("preset").value : "workspace-write";
  const { sessionId } = await call("session.create", model ? { model } : {});
  if (preset !== "workspace-write") await call("session.setPermission", { sessionId, preset });
  await refreshSessions();
  await openSession(sessionId);
}

async function send(mode) {
  const input = $("prompt");
  const text = input.value;
  if (!text.trim()) return;
  state.lastPrompt = text;
  if (!state.open) await newSession({ chosen: true });
  input.value = "";
  autosize();
  $("command-menu").hidden = true;
  $("command-menu").classList.remove("files");
  // Sending means wanting to see the answer: follow it even from further up.
  followLatest();
  try {
    const accepted = await call("session.prompt", { sessionId: state.open.id, text, mode, clientRequestId: crypto.randomUUID() });
    // A command's outcome also arrives as the session's command/done notice.
    if (accepted.command?.kind === "error") toast(accepted.command.text);
  } catch (error) {
    input.value = text;
    fail(error);
  }
}

// The `/` menu: the commands a prompt can run, filtered by what was typed so far.
let commandCatalog = null;
async function showCommands() {
  const input = $("prompt");
  const typed = input.value;
  const menu = $("command-menu");
  if (!typed.startsWith("/") || /\s/.test(typed)) {
    // The menu may be listing files for an `@` (mentions.js), which is not the commands'.
    if (!menu.classList.contains("files")) menu.hidden = true;
    return;
  }
  menu.classList.remove("files");
  if (!commandCatalog) commandCatalog = (await call("commands.list")).commands;
  // What is typed now: the catalog may have arrived after more keys (or a send).
  if (input.value !== typed) return;
  const matching = commandCatalog.filter((command) => `/${command.name}`.startsWith(typed));
  menu.replaceChildren(
    ...matching.map((command) => {
      const row = element(
        "button",
        { type: "button", class: "command", role: "option", "data-command": command.name },
        element("strong", {}, `/${command.name}`),
        command.usage ? ` ${command.usage}` : "",
        element("span", { class: "muted" }, ` ${command.description}`),
      );
      row.addEventListener("click", () => {
        input.value = `/${command.name} `;
        menu.hidden = true;
        input.focus();
      });
      return row;
    }),
  );
  menu.hidden = matching.length === 0;
}

// The `/` menu from the keyboard: arrows move through it, Tab or Enter takes the marked
// command, Escape closes it (and cancels nothing). Answers whether the key was the menu's.
function menuKey(event) {
  const options = [...$("command-menu").querySelectorAll(".command")];
  if (!options.length) return false;
  const at = options.findIndex((option) => option.classList.contains("active"));
  const mark = (index) => {
    options.forEach((option, i) => {
      option.classList.toggle("active", i === index);
      option.setAttribute("aria-selected", String(i === index));
    });
    options[index].scrollIntoView({ block: "nearest" });
  };
  switch (event.key) {
    case "ArrowDown":
      mark(at < 0 ? 0 : (at + 1) % options.length);
      break;
    case "ArrowUp":
      mark(at <= 0 ? options.length - 1 : at - 1);
      break;
    case "Tab":
    case "Enter":
      if (event.key === "Enter" && at < 0) return false;
      options[Math.max(at, 0)].click();
      break;
    case "Escape":
      $("command-menu").hidden = true;
      $("command-menu").classList.remove("files");
      break;
    default:
      return false;
  }
  event.preventDefault();
  return true;
}

// Rename in place: the title becomes a text box; Enter keeps the new title, Escape the old.
function renameInline() {
  const open = state.open;
  if (!open) return;
  const heading = $("title");
  const box = element("input", {
    type: "text",
    class: "rename-box",
    value: open.title || "",
    "aria-label": "The session's title",
    maxlength: "200",
  });
  let done = false;
  const finish = (keep) => {
    if (done) return;
    done = true;
    box.remove();
    heading.hidden = false;
    const title = box.value.trim();
    if (keep && title && title !== open.title) {
      call("session.rename", { sessionId: open.id, title }).catch((e) => fail(e));
    }
  };
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter") finish(true);
    if (event.key === "Escape") {
      event.preventDefault();
      finish(false);
    }
  });
  box.addEventListener("blur", () => finish(true));
  heading.hidden = true;
  heading.after(box);
  box.focus();
  box.select();
}

// A delete moves the session to the trash at once and offers to take it back for a while.
async function deleteWithUndo() {
  const open = state.open;
  if (!open) return;
  const title = open.title || `Session ${open.id.slice(0, 8)}`;
  await call("session.delete", { sessionId: open.id });
  const undo = element("button", { type: "button", class: "link toast-action" }, "Undo");
  const note = toast(`Deleted “${title}”. `, undefined, undo, 10000);
  undo.addEventListener("click", async () => {
    note.remove();
    try {
      await call("session.restore", { sessionId: open.id });
      await refreshSessions();
      await openSession(open.id);
    } catch (error) {
      fail(error);
    }
  });
}

function autosize() {
  const input = $("prompt");
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}

function wireComposer() {
  const input = $("prompt");
  input.addEventListener("input", autosize);
  wireMentions({ input, menu: $("command-menu"), call, sessionId: () => state.open?.id, onError: fail });
  wireDrop({ input, target: $("composer"), onChange: autosize, tell: (text) => toast(text) });
  input.addEventListener("input", () => showCommands().catch((e) => fail(e)));
  input.addEventListener("keydown", (event) => {
    if (!$("command-menu").hidden && menuKey(event)) return;
    if (event.key === "ArrowUp" && !input.value && state.lastPrompt) {
      // Up in an empty box brings back the last prompt sent, to fix and send again.
      event.preventDefault();
      input.value = state.lastPrompt;
      autosize();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send(state.open?.running ? enterWhileBusy() : "queue");
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented) return;
    if (event.key === "Escape" && state.open?.running) call("session.cancel", { sessionId: state.open.id }).catch((e) => fail(e));
  });
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    send("queue");
  });
  $("steer").addEventListener("click", () => send("steer"));
  $("preset").addEventListener("change", () => {
    if (!state.open) return;
    call("session.setPermission", { sessionId: state.open.id, preset: $("preset").value })
      .then(() => toast(`Permissions: ${$("preset").selectedOptions[0].textContent} from the next call on`))
      .catch((e) => fail(e));
  });
  $("cancel").addEventListener("click", () => call("session.cancel", { sessionId: state.open.id }).catch((e) => fail(e)));
  $("new").addEventListener("click", () => newSession().catch((e) => fail(e)));
  $("search").addEventListener("input", searchChanged);
  $("search-text").addEventListener("change", searchChanged);
  $("rename").addEventListener("click", renameInline);
  $("fork").addEventListener("click", () => fork(undefined).catch((e) => fail(e)));
  $("items").addEventListener("dsh-fork", (event) => fork(event.detail.itemId).catch((e) => fail(e)));
  $("items").addEventListener("dsh-settings", () => openSettings().catch((e) => fail(e)));
  $("delete").addEventListener("click", () => deleteWithUndo().catch((e) => fail(e)));
  $("view-chat").addEventListener("click", () => showView("chat"));
  $("view-trajectory").addEventListener("click", () => showView("trajectory"));
  $("more").addEventListener("click", () => {
    if (!state.open) return;
    const session = state.sessions.find((s) => s.id === state.open.id) || { id: state.open.id, title: state.open.title };
    showMenu($("more"), "This session", sessionActions(session));
  });
  // Inspect: the whole item (not the wire's cut copy) in a dialog.
  $("items").addEventListener("dsh-inspect", (event) => {
    call("session.item", { sessionId: state.open.id, itemId: event.detail.itemId })
      .then((item) => {
        $("inspect-body").replaceChildren(inspection(item));
        $("inspect-title").textContent = `${item.name} call`;
        $("inspect").showModal();
      })
      .catch((error) => fail(error));
  });
  $("items").addEventListener("dsh-expand", (event) => {
    call("session.item", { sessionId: state.open.id, itemId: event.detail.itemId })
      .then((item) => {
        state.open.items.set(item.id, item);
        markDirty(item.id);
      })
      .catch((error) => fail(error));
  });
  // A subagent's conversation, read-only, under its parent's tool card (read again on each
  // opening, so a running child shows how far it got).
  $("items").addEventListener("dsh-child", (event) => {
    const box = event.target.closest(".subagent").querySelector(".child-conversation");
    if (!box.hidden) {
      box.hidden = true;
      event.target.textContent = "Show the subagent's conversation";
      return;
    }
    call("session.history", { sessionId: event.detail.sessionId })
      .then((history) => {
        box.replaceChildren(...history.items.map((item) => renderItem(item)));
        for (const button of box.querySelectorAll(".fork-here, .approval-actions button, .question-actions button")) button.remove();
        box.hidden = false;
        event.target.textContent = "Hide the subagent's conversation";
      })
      .catch((error) => fail(error));
  });
  $("items").addEventListener("dsh-answer", (event) => {
    for (const button of event.target.closest(".approval").querySelectorAll("button")) button.disabled = true;
    call("approval.respond", event.detail)
      .then(({ accepted, rule }) => {
        if (!accepted) toast("That approval was already decided or is no longer waiting.");
        else if (rule) toast(`Always allowed: ${rule} (saved under permissions.allow in settings.yaml)`);
      })
      .catch((error) => fail(error));
  });
  $("items").addEventListener("dsh-question", (event) => {
    const buttons = event.target.closest(".question").querySelectorAll("button");
    for (const button of buttons) button.disabled = true;
    call("question.respond", event.detail)
      .then(({ accepted }) => {
        if (!accepted) toast("Those questions were already answered or are no longer waiting.");
      })
      .catch((error) => {
        // A refused answer (nothing picked or written) can be corrected and sent again.
        for (const button of buttons) button.disabled = false;
        fail(error);
      });
  });
  $("theme").addEventListener("click", cycleTheme);
  $("model").addEventListener("focus", () => (state.lastModel = $("model").value));
  $("model").addEventListener("change", () => {
    if ($("model").value === OTHER_MODEL) {
      askOtherModel();
      return;
    }
    if (!state.open) return;
    call("session.selectModel", { sessionId: state.open.id, model: $("model").value }).catch((e) => fail(e));
  });
}

async function startDemo() {
  try {
    const { sessionId } = await call("session.demo", {});
    await refreshSessions();
    await openSession(sessionId);
  } catch (error) {
    fail(error);
  }
}

// ---- settings --------------------------------------------------------------------------

// The settings' tabs: arrows move between them, as a tab list does.
function showTab(id) {
  for (const tab of document.querySelectorAll('#settings [role="tab"]')) {
    const chosen = tab.id === id;
    tab.setAttribute("aria-selected", String(chosen));
    tab.tabIndex = chosen ? 0 : -1;
    $(tab.getAttribute("aria-controls")).hidden = !chosen;
  }
}

function wireTabs() {
  const tabs = [...document.querySelectorAll('#settings [role="tab"]')];
  tabs.forEach((tab, index) => {
    tab.addEventListener("click", () => showTab(tab.id));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (!step) return;
      event.preventDefault();
      const next = tabs[(index + step + tabs.length) % tabs.length];
      showTab(next.id);
      next.focus();
    });
  });
  for (const radio of document.querySelectorAll('input[name="theme"]')) radio.addEventListener("change", () => setTheme(radio.value));
  $("enter-busy").addEventListener("change", () => localStorage.setItem("dsh-enter-busy", $("enter-busy").value));
}

async function openSettings() {
  const theme = localStorage.getItem("dsh-theme") || "system";
  for (const radio of document.querySelectorAll('input[name="theme"]')) radio.checked = radio.value === theme;
  $("enter-busy").value = enterWhileBusy();
  const host = state.host || (await call("host.describe"));
  const facts = [
    ["Version", host.version],
    ["Profile", host.profile],
    ["Folder for new sessions", host.cwd],
    ["Providers", host.providers.join(", ") || "none"],
    ["Default model", host.defaultModel || "none usable"],
    ["Listening", host.remote ? "beyond this machine" : "on this machine only"],
  ];
  $("about").replaceChildren(...facts.flatMap(([name, value]) => [element("dt", {}, name), element("dd", {}, value)]));
  const models = await call("session.models", state.open ? { sessionId: state.open.id } : {}).catch(() => null);
  $("model-list").replaceChildren(
    ...(models?.models || []).map((model) =>
      element(
        "li",
        {},
        `${model.label} `,
        element("code", {}, model.route),
        model.contextWindow ? element("span", { class: "muted" }, ` · ${tokens(model.contextWindow)} context`) : null,
      ),
    ),
  );
  if (!$("model-list").children.length) $("model-list").append(element("li", { class: "muted" }, "No model is usable yet: add a key or an endpoint above."));
  const [credentials, settings] = await Promise.all([call("credentials.describe"), call("settings.describe")]);
  const key = credentials.credentials.find((credential) => credential.name === "DEEPSEEK_API_KEY");
  $("key-state").textContent = key?.stored ? "(stored)" : key?.inEnvironment ? "(from the environment)" : "(not set)";
  $("settings-url").value = settings.baseUrl || "";
  const writable = credentials.writable && settings.writable;
  for (const id of ["settings-key", "save-key", "remove-key", "settings-url", "save-url"]) $(id).disabled = !writable;
  $("settings-note").textContent = writable
    ? "A stored key wins over the environment. An endpoint change reloads the model adapter; running turns keep theirs."
    : "This server listens beyond this machine: settings cannot be changed from here.";
  $("settings").showModal();
}

async function afterSettings(message) {
  toast(message);
  state.host = await call("host.describe");
  if (!state.open) renderHero(state.host);
  await loadModels(state.open?.id);
  await openSettings();
}

function wireSettings() {
  wireTabs();
  $("open-settings").addEventListener("click", () => openSettings().catch((e) => fail(e)));
  $("save-key").addEventListener("click", async () => {
    try {
      await call("credentials.set", { name: "DEEPSEEK_API_KEY", value: $("settings-key").value });
      $("settings-key").value = "";
      await afterSettings("The key is stored.");
    } catch (error) {
      fail(error);
    }
  });
  $("remove-key").addEventListener("click", async () => {
    try {
      await call("credentials.unset", { name: "DEEPSEEK_API_KEY" });
      await afterSettings("The stored key is removed.");
    } catch (error) {
      fail(error);
    }
  });
  $("save-url").addEventListener("click", async () => {
    try {
      const value = $("settings-url").value.trim();
      await call("settings.update", value ? { baseUrl: value } : {});
      await afterSettings(value ? "The endpoint is saved." : "Back to the default endpoint.");
    } catch (error) {
      fail(error);
    }
  });
}

// ---- start -------------------------------------------------------------------------------

function renderHero(host) {
  $("version").textContent = `v${host.version}`;
  const facts = element(
    "dl",
    { class: "facts" },
    element("dt", {}, "Directory"), element("dd", {}, host.cwd || "-"),
    element("dt", {}, "Model"), element("dd", {}, host.defaultModel || "none"),
  );
  const next = host.defaultModel
    ? element("p", { class: "muted", id: "ready" }, "Type a task below to start a session, or pick one on the left.")
    : onboarding();
  $("hero").replaceChildren(element("h1", {}, "What should the agent do?"), facts, next);
}

// No usable model: a DeepSeek key entered here is stored by the host (readable by its owner
// only) and used from the next request on; an OpenAI-compatible base URL given with it sends
// the requests there instead (the same wire, written to settings.yaml).
function onboarding() {
  const input = element("input", { id: "api-key", type: "password", autocomplete: "off", placeholder: "sk-…", "aria-label": "API key", required: true });
  const endpoint = element("input", { id: "onboarding-url", type: "url", autocomplete: "off", placeholder: "https://api.deepseek.com (default)", "aria-label": "OpenAI-compatible base URL (optional)" });
  const form = element(
    "form",
    { class: "notice warning onboarding", id: "onboarding" },
    element("p", {}, element("strong", {}, "No model is configured yet."), " Enter a DeepSeek API key, or the key and base URL of any OpenAI-compatible endpoint; or start the host with ", element("code", {}, "DEEPSEEK_API_KEY"), " set."),
    element("div", { class: "row" }, input, element("button", { type: "submit" }, "Save")),
    element("div", { class: "row" }, endpoint),
    state.host.demo
      ? element(
          "p",
          { class: "demo" },
          "Or ",
          element("button", { type: "button", id: "demo", class: "link", onclick: startDemo }, "open the offline demo"),
          ": a recorded session replayed in place of the model (no key, no network); its shell command runs for real.",
        )
      : null,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      if (endpoint.value.trim()) await call("settings.update", { baseUrl: endpoint.value.trim() });
      await call("credentials.set", { name: "DEEPSEEK_API_KEY", value: input.value });
      input.value = "";
      state.host = await call("host.describe");
      renderHero(state.host);
      await loadModels();
    } catch (error) {
      fail(error);
    }
  });
  return form;
}

// A project's own configuration (its .mcp.json servers, hook files, .dsh/settings.yaml,
// skills) waits until the person trusts the folder: asked once here, remembered by the host.
async function refreshTrust() {
  const banner = $("trust");
  let project;
  try {
    project = await call("project.describe");
  } catch {
    banner.hidden = true;
    return;
  }
  if (project.trusted || !(project.waiting || []).length) {
    banner.hidden = true;
    return;
  }
  const trust = element("button", { type: "button", id: "trust-yes" }, "Trust this folder");
  const later = element("button", { type: "button", class: "secondary", id: "trust-no" }, "Not now");
  trust.addEventListener("click", async () => {
    trust.disabled = true;
    try {
      await call("project.trust");
      banner.hidden = true;
      toast("Trusted: the folder's own servers, hooks, settings and skills apply from now on.");
    } catch (error) {
      trust.disabled = false;
      fail(error);
    }
  });
  later.addEventListener("click", () => { banner.hidden = true; });
  banner.replaceChildren(
    element("p", {}, element("strong", {}, "This folder's own configuration is waiting for your trust: "),
      ...project.waiting.flatMap((name, index) => (index ? [", ", element("code", {}, name)] : [element("code", {}, name)])),
      ". Its MCP servers and hooks run commands, and its settings and skills steer the agent. Trust it only if you trust who wrote ",
      element("code", {}, project.root), "."),
    element("div", { class: "row" }, trust, later),
  );
  banner.hidden = false;
}

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
  // not one call after another.
  const wanted = location.hash.slice(1);
  const history = wanted ? call("session.history", { sessionId: wanted, limit: FIRST_PAGE }).catch(() => null) : null;
  const [host] = await Promise.all([call("host.describe"), refreshTrust(), refreshSessions(), loadModels().catch(() => {})]);
  state.host = host;
  renderHero(host);
  connect();
  if (wanted && state.sessions.some((s) => s.id === wanted)) await openSession(wanted, await history);
}

start().catch((error) => toast(error.message || String(error)));
