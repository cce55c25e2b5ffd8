// Tool cards: a call's one line and its card by view (a terminal, a diff as unified hunks, a
// file's lines, a search, a todo list, a delegation, anything else as text), the Inspect view of
// a call, and the card of the questions the model put to the person.

import { element, seconds } from "./dom.js";

function lines(text, firstLine) {
  const table = element("div", { class: "numbered" });
  text.split("\n").forEach((line, index) => {
    table.append(
      element("span", { class: "ln" }, String(firstLine + index)),
      element("span", { class: "lt" }, line),
    );
  });
  return table;
}

// A change as unified hunks: the line's number before and after, its sign, its text with the
// changed words marked.
const SIGNS = { added: "+", removed: "−", context: " " };
function diff(view) {
  const table = element("div", { class: "diff", role: "table", "aria-label": `Changes to ${view.path}` });
  (view.hunks || []).forEach((hunk, index) => {
    if (index > 0) table.append(element("div", { class: "hunk-gap", role: "row" }, "⋯"));
    for (const line of hunk.lines) {
      const text = line.spans?.length
        ? element("span", { class: "dt" }, ...line.spans.map((span) => (span.changed ? element("mark", {}, span.text) : span.text)))
        : element("span", { class: "dt" }, line.text);
      table.append(
        element(
          "div",
          { class: `dl ${line.kind}`, role: "row" },
          element("span", { class: "dn" }, line.old === undefined ? "" : String(line.old)),
          element("span", { class: "dn" }, line.new === undefined ? "" : String(line.new)),
          element("span", { class: "ds" }, SIGNS[line.kind]),
          text,
        ),
      );
    }
  });
  return table;
}

function diffStat(view) {
  return element("span", { class: "diff-stat" }, element("span", { class: "plus" }, `+${view.added}`), " ", element("span", { class: "minus" }, `−${view.removed}`));
}

// The questions of an `ask_user_question` call, read from its arguments (empty when they do not
// read): the call's own card is the question card; this one only says what came back.
function askedQuestions(item) {
  try {
    return JSON.parse(item.arguments).questions?.map((question) => question.question) || [];
  } catch {
    return [];
  }
}

function toolBody(item) {
  const view = item.view || { kind: "generic", arguments: item.arguments, result: "" };
  if (item.name === "ask_user_question" && view.kind === "generic") {
    return element(
      "div",
      {},
      element("ul", { class: "asked" }, ...askedQuestions(item).map((question) => element("li", {}, question))),
      view.result ? element("pre", { class: "output" }, view.result) : element("p", { class: "muted" }, "Waiting for your answers in the card below."),
    );
  }
  switch (view.kind) {
    case "terminal":
      return element(
        "div",
        { class: "terminal" },
        element("div", { class: "command" }, element("span", { class: "prompt" }, "$ "), view.command),
        view.output ? element("pre", { class: "output" }, view.output) : null,
        view.exitCode === undefined || view.exitCode === null
          ? null
          : element("span", { class: view.exitCode === 0 ? "pill ok" : "pill bad" }, `exit ${view.exitCode}`),
      );
    case "diff":
      return element("div", {}, element("div", { class: "path" }, view.path, " ", diffStat(view)), diff(view));
    case "read":
      return element("div", {}, element("div", { class: "path" }, view.path), view.text ? lines(view.text, view.firstLine) : null);
    case "search":
      return element("div", {}, element("div", { class: "path" }, view.pattern), element("pre", { class: "output" }, view.results || "(nothing found)"));
    case "todo":
      return element(
        "ul",
        { class: "todo" },
        ...view.items.map((todo) => element("li", { class: `todo-${todo.status}` }, todo.content)),
      );
    case "subagent":
      return element(
        "div",
        { class: "subagent" },
        element("div", { class: "path" }, view.label || "Delegated task"),
        element("details", { class: "subagent-task" }, element("summary", {}, "Task"), element("pre", { class: "output" }, view.prompt)),
        view.result ? element("pre", { class: "output" }, view.result) : null,
        view.child
          ? element(
              "button",
              {
                type: "button",
                class: "show-child",
                onclick: (event) => event.target.dispatchEvent(new CustomEvent("dsh-child", { bubbles: true, detail: { sessionId: view.child } })),
              },
              "Show the subagent's conversation",
            )
          : null,
        element("div", { class: "child-conversation", hidden: true }),
      );
    default:
      return element(
        "div",
        {},
        element("pre", { class: "output" }, item.arguments),
        view.result ? element("pre", { class: "output" }, view.result) : null,
      );
  }
}

// A tool card's one line: what the call is about (the command, the path, the pattern, the task)
// and how it went, a non-zero exit reading as the failure it is.
function toolLine(item) {
  const view = item.view || {};
  const firstLine = (text) => (text || "").split("\n")[0].slice(0, 160);
  const what = {
    terminal: () => firstLine(view.command),
    diff: () => view.path,
    read: () => view.path,
    search: () => view.pattern,
    subagent: () => view.label,
    todo: () => `${(view.items || []).filter((todo) => todo.status === "completed").length} of ${(view.items || []).length} done`,
  }[view.kind]?.() ||
    (item.name === "ask_user_question" ? `${askedQuestions(item).length} questions for you` : null) ||
    firstLine(item.arguments);
  const exit = view.kind === "terminal" ? view.exitCode : undefined;
  const badExit = exit !== undefined && exit !== null && exit !== 0;
  const failed = item.status === "error" || badExit;
  let status = view.kind === "diff" ? `+${view.added} −${view.removed}` : "done";
  if (item.durationMs !== undefined && item.status !== "running") status += ` · ${seconds(item.durationMs)}`;
  if (item.status === "running") status = "running…";
  else if (badExit) status = `failed · exit ${exit}`;
  else if (item.status === "error") status = "failed";
  return { what, status, failed };
}

// Why a call failed, unless the card's own view already shows the same text.
function failureShown(item) {
  if (!item.error) return false;
  const view = item.view || {};
  const shown = view.output ?? view.result ?? view.results ?? view.text ?? "";
  return shown.trim() !== item.error.trim();
}

// A tool call as one line (what it is about, how it went, its time) that opens to its card.
export function toolCard(item) {
  const { what, status, failed } = toolLine(item);
  return element(
    "details",
    { class: `tool tool-${failed ? "error" : item.status}`, open: failed || item.status === "running" || item.view?.kind === "diff" },
    element(
      "summary",
      {},
      element("span", { class: "tool-name" }, item.name),
      what ? element("span", { class: "tool-what", title: what }, what) : null,
      element("span", { class: "tool-status" }, status),
    ),
    failureShown(item) ? element("div", { class: "tool-failure", role: "status" }, item.error) : null,
    toolBody(item),
    element(
      "button",
      {
        type: "button",
        class: "link inspect",
        title: "The call's arguments, result and timing",
        onclick: (event) => event.target.dispatchEvent(new CustomEvent("dsh-inspect", { bubbles: true, detail: { itemId: item.id } })),
      },
      "Inspect",
    ),
    item.truncated
      ? element(
          "button",
          {
            type: "button",
            class: "expand",
            onclick: (event) => event.target.dispatchEvent(new CustomEvent("dsh-expand", { bubbles: true, detail: { itemId: item.id } })),
          },
          "Cut at 16 KB: show all",
        )
      : null,
  );
}

// A call laid open: what the model asked (its arguments, pretty when they are JSON), what came
// back, whether it failed and how long it took.
export function inspection(item) {
  let pretty = item.arguments;
  try {
    pretty = JSON.stringify(JSON.parse(item.arguments), null, 2);
  } catch {
    // Arguments that are not JSON are shown as the model wrote them.
  }
  const view = item.view || {};
  const result = view.output ?? view.result ?? view.results ?? view.text ?? null;
  const facts = [
    ["Tool", item.name],
    ["Call", item.id],
    ["Status", item.status],
    ["Time", item.durationMs === undefined ? "—" : seconds(item.durationMs)],
  ];
  if (view.exitCode !== undefined && view.exitCode !== null) facts.push(["Exit code", String(view.exitCode)]);
  return element(
    "div",
    { class: "inspection" },
    element("dl", { class: "facts" }, ...facts.flatMap(([name, value]) => [element("dt", {}, name), element("dd", {}, value)])),
    element("h3", {}, "Arguments"),
    element("pre", { class: "output" }, pretty || "(none)"),
    item.error ? element("h3", {}, "Failure") : null,
    item.error ? element("pre", { class: "output failure" }, item.error) : null,
    result !== null ? element("h3", {}, "Result") : null,
    result !== null ? element("pre", { class: "output" }, result || "(empty)") : null,
  );
}

// Questions the model put to the person: one fieldset each (radio buttons for one choice,
// checkboxes for several, a text field for an answer of their own); once decided, the answers.
export function questionCard(item) {
  const card = element("div", {
    class: item.outcome ? "question decided" : "question pending",
    role: item.outcome ? null : "group",
    "aria-label": "Questions from the agent",
  });
  const answers = item.outcome?.outcome === "answered" ? item.outcome.answers : [];
  for (const question of item.questions) {
    const box = element(
      "fieldset",
      { class: "question-item", "data-question": question.id },
      element(
        "legend",
        {},
        question.header ? element("span", { class: "question-header" }, question.header) : null,
        element("span", { class: "question-text" }, question.question),
      ),
    );
    if (item.outcome) {
      const answer = answers.find((answer) => answer.id === question.id);
      const said = [...(answer?.selected || []), ...(answer?.text ? [answer.text] : [])];
      box.append(element("div", { class: "question-answer" }, said.length ? said.join(", ") : "(not answered)"));
    } else {
      const name = `${item.id}:${question.id}`;
      for (const option of question.options || []) {
        box.append(
          element(
            "label",
            { class: "choice" },
            element("input", { type: question.multi_select ? "checkbox" : "radio", name, value: option.label }),
            element("span", { class: "choice-label" }, option.label),
            option.description ? element("span", { class: "choice-description" }, option.description) : null,
          ),
        );
      }
      box.append(
        element("input", {
          type: "text",
          class: "own-answer",
          "aria-label": `Your answer to: ${question.question}`,
          placeholder: question.options?.length ? "Or write your own answer" : "Your answer",
        }),
      );
    }
    card.append(box);
  }
  if (item.outcome) {
    const ended = { cancelled: "Dismissed without an answer", unavailable: "No one answered" };
    if (ended[item.outcome.outcome]) card.append(element("div", { class: "question-outcome" }, ended[item.outcome.outcome]));
    return card;
  }
  const send = (cancelled) => (event) => {
    const answers = cancelled
      ? []
      : [...card.querySelectorAll(".question-item")].map((box) => ({
          id: box.dataset.question,
          selected: [...box.querySelectorAll("input:checked")].map((input) => input.value),
          text: box.querySelector(".own-answer").value.trim() || undefined,
        })).filter((answer) => answer.selected.length || answer.text);
    event.target.dispatchEvent(
      new CustomEvent("dsh-question", { bubbles: true, detail: { questionId: item.id, answers, cancelled } }),
    );
  };
  card.append(
    element(
      "div",
      { class: "question-actions" },
      element("button", { type: "button", class: "submit", onclick: send(false) }, "Answer"),
      element("button", { type: "button", class: "dismiss", onclick: send(true) }, "Dismiss"),
    ),
  );
  return card;
}
