// Plan mode in the page: the review card of an `exit_plan_mode` approval (the plan itself,
// Approve, Keep planning with a note for the model) and the composer's plan chip, which turns
// plan mode on and off with the `/plan` command and follows the mode the session logged
// (`plan/mode`, pushed as the `plan` control; `planMode` in the history).

import { element } from "./dom.js";
import { call, fail, state, toast } from "./core.js";

// The plan's Markdown as plain elements (headings, list items, code, paragraphs); its text is
// only ever text, never markup.
function planBody(plan) {
  const body = element("div", { class: "plan-body markdown" });
  let code = null;
  for (const line of plan.split("\n")) {
    if (line.startsWith("```")) {
      if (code) {
        body.append(element("pre", {}, code.join("\n")));
        code = null;
      } else code = [];
      continue;
    }
    if (code) {
      code.push(line);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*]|\d+[.)])\s+(.*)$/.exec(line);
    if (heading) body.append(element(`h${Math.min(heading[1].length + 2, 6)}`, {}, heading[2]));
    else if (item) body.append(element("div", { class: "plan-item" }, `• ${item[1]}`));
    else if (line.trim()) body.append(element("p", {}, line));
  }
  if (code) body.append(element("pre", {}, code.join("\n")));
  return body;
}

export function planCard(item) {
  const answer = (outcome, note) => (event) =>
    event.target.dispatchEvent(
      new CustomEvent("dsh-answer", { bubbles: true, detail: { approvalId: item.id, outcome, note } }),
    );
  const decided = {
    "allowed-once": "Approved: the agent carries the plan out",
    rejected: "Kept planning",
    cancelled: "Dismissed",
    unavailable: "No one answered: still planning",
  };
  const note = element("textarea", {
    class: "plan-note",
    rows: "2",
    placeholder: "What should the plan change? (sent to the agent with Keep planning)",
    "aria-label": "Note for the agent",
  });
  const keep = (event) => answer("rejected", note.value.trim() || undefined)(event);
  return element(
    "div",
    {
      class: item.outcome ? "approval plan-review decided" : "approval plan-review pending",
      role: item.outcome ? null : "alertdialog",
      "aria-label": "Review the plan",
    },
    element("div", { class: "approval-ask" }, element("strong", {}, "Plan for review")),
    planBody(item.reason || ""),
    item.outcome
      ? element(
          "div",
          { class: "approval-outcome" },
          (decided[item.outcome] || item.outcome) + (item.note ? `: “${item.note}”` : ""),
        )
      : element(
          "div",
          { class: "plan-actions" },
          note,
          element(
            "div",
            { class: "approval-actions" },
            element("button", { type: "button", class: "allow", onclick: answer("allowed-once"), title: "Leave plan mode and carry the plan out (Y)" }, "Approve"),
            element("button", { type: "button", class: "reject secondary", onclick: keep, title: "Stay in plan mode; the note goes to the agent (N)" }, "Keep planning"),
          ),
        ),
  );
}

// The chip: pressed while the open session plans. Before a session exists it is the choice
// the first prompt's new session starts with (see `applyPlanChoice`).
export function showPlanChip(on) {
  const chip = document.getElementById("plan-chip");
  if (!chip) return;
  chip.setAttribute("aria-pressed", String(Boolean(on)));
  chip.classList.toggle("on", Boolean(on));
}

export async function applyPlanChoice(sessionId) {
  if (document.getElementById("plan-chip")?.getAttribute("aria-pressed") !== "true") return;
  await call("session.prompt", { sessionId, text: "/plan" });
}

export function wirePlanChip() {
  const chip = document.getElementById("plan-chip");
  chip.addEventListener("click", () => {
    const on = chip.getAttribute("aria-pressed") !== "true";
    if (!state.open) {
      showPlanChip(on);
      return;
    }
    call("session.prompt", { sessionId: state.open.id, text: on ? "/plan" : "/plan off" })
      .then((accepted) => {
        if (accepted.command?.kind === "error") toast(accepted.command.text);
        else showPlanChip(on);
      })
      .catch((error) => fail(error));
  });
}
