// The session list: conversations grouped by folder, newest activity first, searched by title
// or, when asked, in their messages; each with a menu (rename, fork, archive, delete).

import { showMenu } from "./menu.js";
import { element } from "./render.js";
import { fork, openSession } from "./app.js";
import { deleteWithUndo, renameInline } from "./composer.js";
import { $, call, fail, state, toast } from "./core.js";

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
export function searchChanged() {
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

export function renderSessions() {
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
      const dot = (state.waiting.get(session.id) ?? session.waiting)
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
export function sessionActions(session) {
  const opened = async () => {
    if (state.open?.id !== session.id) await openSession(session.id);
  };
  const run = (work) => () => work().catch((error) => fail(error));
  return [
    { label: "Rename", run: run(async () => { await opened(); renameInline(); }) },
    { label: "Fork", run: run(async () => { await opened(); await fork(undefined); }) },
    { label: "Export", run: () => downloadArchive(session.id) },
    { label: session.archived ? "Unarchive" : "Archive", run: run(() => archive(session, !session.archived)) },
    { label: "Delete", danger: true, run: run(async () => { await opened(); await deleteWithUndo(); }) },
  ];
}

// The session's archive (its log, its subagents', its images), downloaded by the browser
// from the server's signed-in `/export` route.
function downloadArchive(id) {
  const link = element("a", { href: `/export?session=${encodeURIComponent(id)}`, download: "" });
  document.body.append(link);
  link.click();
  link.remove();
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

export async function refreshSessions() {
  const { sessions } = await call("session.list");
  state.sessions = sessions;
  renderSessions();
}
