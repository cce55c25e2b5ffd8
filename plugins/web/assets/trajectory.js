// The Trajectory view: the session as a timeline of turns, their steps and the calls each step
// made, with times, tokens and the cache's share, a bar per step scaled to the slowest one.
// A call opens its card in the chat.

import { element, seconds, tokens } from "./render.js";

function stepLine(step) {
  const parts = [step.durationMs === undefined ? "answering…" : seconds(step.durationMs)];
  if (step.ttftMs !== undefined) parts.push(`first token ${seconds(step.ttftMs)}`);
  if (step.inputTokens) {
    const cached = Math.round((step.cacheReadTokens / step.inputTokens) * 100);
    parts.push(`${tokens(step.inputTokens)} in (${cached}% cached)`);
  }
  if (step.outputTokens) parts.push(`${tokens(step.outputTokens)} out`);
  if (step.retries) parts.push(`${step.retries} ${step.retries === 1 ? "retry" : "retries"}`);
  return parts.join(" · ");
}

export function renderTrajectory(container, trajectory, openCall) {
  const slowest = Math.max(1, ...trajectory.turns.flatMap((turn) => turn.steps.map((step) => step.durationMs || 0)));
  container.replaceChildren(
    ...trajectory.turns.map((turn) =>
      element(
        "section",
        { class: `trajectory-turn outcome-${turn.outcome || "running"}` },
        element(
          "h3",
          {},
          `Turn ${turn.turn}`,
          element(
            "span",
            { class: "muted" },
            ` · ${turn.durationMs === undefined ? "running" : seconds(turn.durationMs)} · ${turn.outcome || "running"}`,
          ),
        ),
        turn.prompt ? element("p", { class: "trajectory-prompt" }, turn.prompt) : null,
        element(
          "ol",
          { class: "trajectory-steps" },
          ...turn.steps.map((step) =>
            element(
              "li",
              {},
              element(
                "div",
                { class: "step-head" },
                element("strong", {}, `Step ${step.step}`),
                element("span", { class: "muted" }, stepLine(step)),
              ),
              element("progress", { class: "step-bar", max: String(slowest), value: String(step.durationMs || 0), "aria-label": `Step ${step.step} time` }),
              step.calls.length
                ? element(
                    "ul",
                    { class: "trajectory-calls" },
                    ...step.calls.map((call) =>
                      element(
                        "li",
                        {},
                        element(
                          "button",
                          { type: "button", class: `link call ${call.ok === false ? "failed" : ""}`, onclick: () => openCall(call.callId) },
                          element("span", { class: "call-status" }, call.ok === undefined ? "…" : call.ok ? "✓" : "✗"),
                          ` ${call.name} `,
                          element("span", { class: "muted" }, call.summary),
                        ),
                        call.durationMs === undefined ? null : element("span", { class: "muted" }, ` ${seconds(call.durationMs)}`),
                      ),
                    ),
                  )
                : null,
            ),
          ),
        ),
      ),
    ),
  );
  if (!trajectory.turns.length) container.append(element("p", { class: "muted pad" }, "Nothing has run in this session yet."));
}
