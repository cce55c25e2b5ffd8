// What every part of the page shares: its boot data and state, the server's methods (`call`),
// and how a failure is told to the person.

import { element } from "./render.js";

export const boot = JSON.parse(document.getElementById("boot").textContent);
export const state = {
  host: null,
  sessions: [],
  running: new Set(),
  open: null, // { id, items: Map, order: [], lastSeq, running, title }
  socket: null,
  bootId: boot.bootId,
  dirty: new Set(),
  retry: 0,
  showArchived: false,
  waiting: new Map(), // session id -> whether it waits for a person, as host/session-waiting said
  hits: null, // Map of session id to its search hit, while the messages are searched
};

let rpcCount = 0;
export async function call(method, payload = {}) {
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

export const $ = (id) => document.getElementById(id);

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
export function fail(error) {
  toast(error.message || String(error), error.code);
}

export function toast(message, code, action, millis = 8000) {
  const area = $("toasts");
  const note = element("div", { class: "toast", role: "alert", title: code || null }, message, action || null);
  area.append(note);
  raise(area);
  setTimeout(() => {
    note.remove();
    if (!area.childElementCount && area.matches(":popover-open")) area.hidePopover();
  }, millis);
  return note;
}

// The toasts are a popover, so they show above an open modal dialog (Settings), which the top
// layer puts above everything else; shown again, they go above a dialog opened since.
function raise(area) {
  if (!area.showPopover) return;
  if (area.matches(":popover-open")) area.hidePopover();
  area.showPopover();
}
