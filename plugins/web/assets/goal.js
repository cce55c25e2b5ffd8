// The goal bar: the open session's goal above the composer (its status, objective and round),
// with the actions that fit its state: Pause and Complete while it runs, Resume once paused or
// blocked (or after a reopen disarmed it), Clear always. It follows the `goal` projection the
// host pushes when the goal changes and is read once per opened session (`goal.get`); every
// action names the revision the bar shows, so a bar that fell behind is refused and redrawn.

import { element } from "./dom.js";
import { $, call, fail, state } from "./core.js";

// The bar's own look, kept beside it.
const STYLE = `
.goal-bar { max-width: 820px; margin: 0.5rem auto 0; padding: 0.35rem 0.75rem; display: flex; align-items: center; gap: 0.6rem; border: 1px solid var(--line); border-left: 3px solid var(--accent); border-radius: 6px; font-size: 0.85rem; box-sizing: border-box; width: calc(100% - 3rem); }
.goal-bar[hidden] { display: none; }
.goal-bar .goal-status { font-weight: 600; text-transform: uppercase; font-size: 0.7rem; letter-spacing: 0.03em; padding: 0.05rem 0.45rem; border-radius: 999px; border: 1px solid currentColor; flex-shrink: 0; }
.goal-bar.active .goal-status { color: var(--accent); }
.goal-bar.paused .goal-status, .goal-bar.disarmed .goal-status { color: var(--muted); }
.goal-bar.blocked { border-left-color: #c0392b; }
.goal-bar.blocked .goal-status { color: #c0392b; }
.goal-bar.complete { border-left-color: #2e8b57; }
.goal-bar.complete .goal-status { color: #2e8b57; }
.goal-bar .goal-text { flex: 1; min-width: 0; display: flex; flex-direction: column; }
.goal-bar .goal-objective { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.goal-bar .goal-detail { color: var(--muted); font-size: 0.75rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.goal-bar .goal-round { color: var(--muted); font-variant-numeric: tabular-nums; flex-shrink: 0; }
.goal-bar .goal-actions { display: flex; gap: 0.25rem; flex-shrink: 0; }
.goal-bar .goal-actions button { font-size: 0.75rem; padding: 0.1rem 0.5rem; }
`;

let styled = false;
// The session whose goal the bar shows, and that goal.
let shown = { sessionId: null, goal: null };

function bar() {
  let node = $("goal-bar");
  if (node) return node;
  if (!styled) {
    // A constructed sheet: the page's policy refuses inline <style> elements.
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(STYLE);
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    styled = true;
  }
  // Above the queue and the composer.
  node = element("div", { class: "goal-bar", id: "goal-bar", role: "status", "aria-label": "Goal", hidden: true });
  const anchor = $("queue") || $("composer");
  anchor?.parentNode?.insertBefore(node, anchor);
  return node;
}

async function act(action) {
  const goal = shown.goal;
  const sessionId = shown.sessionId;
  if (!goal || !sessionId) return;
  try {
    const value = await call(`goal.${action}`, { sessionId, goalId: goal.id, revision: goal.revision });
    renderGoal(sessionId, value);
  } catch (error) {
    fail(error);
    showGoal(sessionId);
  }
}

function button(label, action, title) {
  return element("button", { type: "button", class: "secondary", "data-goal-action": action, title, onclick: () => act(action) }, label);
}

// Whether goal view `a` is older than `b` of the same goal: an earlier revision, or the same
// one with fewer rounds started (a round's start is no revision of its own).
function older(a, b) {
  return a.revision < b.revision || (a.revision === b.revision && a.roundsStarted < b.roundsStarted);
}

// Draws `value` (`{goal}` as the projection carries it) when it is the open session's, unless
// the bar already shows a newer view of that goal: an action's answer can arrive after the
// projection that followed it (a round started at once), and must not draw the bar back.
export function renderGoal(sessionId, value) {
  if (!state.open || state.open.id !== sessionId) return;
  const goal = value?.goal ?? null;
  const before = shown.sessionId === sessionId ? shown.goal : null;
  if (goal && before && goal.id === before.id && older(goal, before)) return;
  shown = { sessionId, goal };
  const node = bar();
  node.hidden = !goal;
  node.replaceChildren();
  if (!goal) return;
  const armed = goal.activation === "armed";
  const running = goal.phase === "active" && armed;
  const status = goal.phase === "active" && !armed ? "active · waiting" : goal.phase;
  node.className = `goal-bar ${goal.phase}${goal.phase === "active" && !armed ? " disarmed" : ""}`;
  const detail = goal.blockedReason
    ? `Blocked: ${goal.blockedReason.message}`
    : goal.phase === "active" && !armed
      ? "Not going on by itself since the session was reopened: Resume to continue."
      : null;
  const actions = element("div", { class: "goal-actions" });
  if (running) actions.append(button("Pause", "pause", "Stop starting new rounds"));
  if (goal.phase !== "complete" && !running) actions.append(button("Resume", "resume", "Go on working towards the goal"));
  if (goal.phase !== "complete") actions.append(button("Complete", "complete", "Mark the goal achieved"));
  actions.append(button("Clear", "clear", "Remove the goal"));
  node.append(
    element("span", { class: "goal-status" }, status),
    element(
      "div",
      { class: "goal-text" },
      element("span", { class: "goal-objective", title: goal.objective }, goal.objective),
      detail && element("span", { class: "goal-detail", title: detail }, detail),
    ),
    element("span", { class: "goal-round", title: "Goal rounds started of the limit" }, `Round ${goal.roundsStarted}/${goal.maxGoalRounds}`),
    actions,
  );
}

// Reads the goal of a session just opened.
export async function showGoal(sessionId) {
  renderGoal(sessionId, { goal: null });
  try {
    renderGoal(sessionId, await call("goal.get", { sessionId }));
  } catch {
    // A host without the goals row has no goals to show.
  }
}
