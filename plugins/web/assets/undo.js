// "Rewind to here" on a prompt: puts the workspace's files back as they were before that
// prompt's turn, reverting the file changes of that turn and of every later one
// (`session.rewind` with the turn, the same path as `/rewind TURN`; the `undo` row refuses a
// conflict or a missing snapshot naming the files). The conversation itself stays as it is.
//
// A user item does not carry its turn; the turn's end does (`turn-end` items, `turn-N`), so a
// prompt's turn is the one of the first turn end after it. Which turns changed files is only
// partly known to the page (a turn end lists the files written or edited, not what commands
// changed), so every ended turn's prompt offers the action and the host says when there is
// nothing to revert. The buttons follow the conversation's list by watching it: no render path
// needs to know about them.

import { element } from "./dom.js";
import { $, call, fail, state, toast } from "./core.js";

const STYLE = `
/* It takes no room of the row (one pixel wide; its words overflow leftwards), so a long prompt lays
   out as it would without it. */
.rewind-here { order: -1; flex: none; width: 1px; direction: rtl; white-space: nowrap; align-self: center; margin-right: 0.5rem; font-size: 0.75rem; color: var(--muted); background: none; border: none; padding: 0.1rem 0; opacity: 0; }
.message.user { flex-wrap: wrap; }
/* A prompt with images is a column (attachments.css): the action goes under them, at the right. */
.message.user:has(.sent-images) .rewind-here { order: 0; width: auto; direction: ltr; align-self: flex-end; margin: 0.2rem 0 0; }
.message.user:has(.sent-images) .rewind-confirm { flex-basis: auto; }
/* Faded out, not hidden: the keyboard still reaches it. */
.message.user:hover .rewind-here, .rewind-here:focus-visible, .message.user.rewinding .rewind-here { opacity: 1; }
.rewind-confirm { flex-basis: 100%; display: flex; flex-direction: column; align-items: flex-end; gap: 0.4rem; margin-top: 0.4rem; font-size: 0.85rem; }
.rewind-confirm p { margin: 0; max-width: 80%; text-align: right; }
.rewind-confirm .rewind-actions { display: flex; gap: 0.4rem; }
.rewind-confirm .rewind-actions button { border-radius: var(--radius); padding: 0.3rem 0.8rem; border: 1px solid var(--line); background: var(--bg); color: var(--fg); }
.rewind-confirm .rewind-actions .rewind-go { border-color: #dc2626; color: #dc2626; }
.toast.rewind-result.refused { border-left: 4px solid #dc2626; }
`;

let styled = false;
function style() {
  if (styled) return;
  // A constructed sheet: the page's policy refuses inline <style> elements.
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(STYLE);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  styled = true;
}

// The files the page knows were written or edited from turn `from` on (commands' changes are
// not listed in the conversation).
function knownFiles(from) {
  const files = new Set();
  for (const item of state.open?.items.values() ?? []) {
    if (item.kind === "turn-end" && item.turn >= from) for (const path of item.produced ?? []) files.add(path);
  }
  return [...files];
}

async function rewind(node, turn) {
  const sessionId = state.open?.id;
  if (!sessionId) return;
  const panel = node.querySelector(":scope > .rewind-confirm");
  for (const button of panel?.querySelectorAll("button") ?? []) button.disabled = true;
  try {
    const outcome = await call("session.rewind", { sessionId, turn });
    // The host's words: the turns undone and the paths put back, or why nothing was touched
    // (a conflict or a missing snapshot names its files).
    const refused = outcome.kind !== "success";
    const said = refused ? outcome.text.charAt(0).toUpperCase() + outcome.text.slice(1) : outcome.text;
    const note = toast(said, null, null, 15000);
    note.classList.add("rewind-result");
    if (refused) note.classList.add("refused");
  } catch (error) {
    fail(error);
  } finally {
    close(node);
  }
}

function close(node) {
  node.querySelector(":scope > .rewind-confirm")?.remove();
  node.classList.remove("rewinding");
  node.querySelector(":scope > .rewind-here")?.focus();
}

// The confirmation, under the prompt: what the action does, then Rewind or Cancel.
function confirmRewind(node, turn) {
  if (node.querySelector(":scope > .rewind-confirm")) return close(node);
  node.classList.add("rewinding");
  const files = knownFiles(turn);
  const listed = files.length ? ` Files written or edited since: ${files.join(", ")}.` : "";
  const panel = element(
    "div",
    { class: "rewind-confirm", role: "group", "aria-label": "Rewind to here?" },
    element(
      "p",
      {},
      element("strong", {}, "Rewind to here? "),
      `Puts the workspace's files back as they were before this prompt: the changes of turn ${turn} and of every later turn are reverted. The conversation stays as it is.${listed}`,
    ),
    element(
      "div",
      { class: "rewind-actions" },
      element("button", { type: "button", class: "rewind-go danger", onclick: () => rewind(node, turn) }, "Rewind"),
      element("button", { type: "button", class: "secondary rewind-cancel", onclick: () => close(node) }, "Cancel"),
    ),
  );
  node.append(panel);
  panel.querySelector(".rewind-cancel").focus();
}

// Gives each prompt that opened an ended turn its button (once; a re-rendered prompt is a new
// node and gets it again).
function mark() {
  const list = $("items");
  if (!list || !state.open) return;
  let prompt = null;
  for (const node of list.children) {
    const id = node.dataset.item;
    if (!id) continue;
    if (node.classList.contains("user")) {
      prompt ??= node;
      continue;
    }
    const item = state.open.items.get(id);
    if (item?.kind !== "turn-end") continue;
    if (prompt && !prompt.querySelector(":scope > .rewind-here")) {
      const turn = item.turn;
      const target = prompt;
      target.append(
        element(
          "button",
          {
            type: "button",
            class: "rewind-here",
            "data-turn": String(turn),
            title: `Revert the workspace changes of turn ${turn} and of every later turn`,
            onclick: () => confirmRewind(target, turn),
          },
          "Rewind to here",
        ),
      );
    }
    prompt = null;
  }
}

const list = $("items");
if (list) {
  style();
  new MutationObserver(mark).observe(list, { childList: true });
}
