// Chat items to DOM: one element per item, keyed by the item's id, rebuilt whole when the item
// changes. An answer's Markdown arrives rendered by the host (sanitized there: no markup of the
// model's own survives) in blocks; while it streams only its changed blocks are replaced, once
// per animation frame.

export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

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

function block(html) {
  const node = document.createElement("div");
  node.className = "md-block";
  node.mdSource = html;
  // The host rendered and sanitized it (plugins/web/core: raw HTML becomes text, links keep to
  // web and mail addresses); the page's CSP also refuses any script.
  node.innerHTML = html;
  return node;
}

function answerBody(item) {
  const body = element("div", { class: "markdown" });
  if (item.blocks?.length) body.append(...item.blocks.map(block));
  else if (item.text) body.append(element("p", { class: "plain" }, item.text));
  return body;
}

// The last line of a streaming thought, shown while the model has not started its answer.
function ticker(item) {
  const lines = (item.reasoning || "").trimEnd().split("\n");
  return lines[lines.length - 1].slice(-160);
}

function reasoningLabel(item) {
  if (!item.streaming || item.text) return "Reasoning";
  return `Thinking… ${ticker(item)}`;
}

// An answer already shown, updated in place: the blocks it shows that are still current stay
// (compared by their HTML, which for blocks kept from the previous frame is the same string),
// the rest are replaced; so a streaming frame and the end of a long stream each re-render one
// block, not the message. False when the node's shape differs and it must be rebuilt.
export function updateAnswer(node, item) {
  if (!node.classList.contains("assistant")) return false;
  const body = node.querySelector(":scope > .markdown");
  const details = node.querySelector(":scope > .reasoning");
  if (!body || body.querySelector(":scope > .plain") || !item.blocks?.length) return false;
  if (Boolean(item.reasoning) !== Boolean(details)) return false;
  node.className = item.streaming ? "message assistant streaming" : "message assistant";
  const shown = body.children;
  let same = 0;
  while (same < shown.length && same < item.blocks.length && shown[same].mdSource === item.blocks[same]) same++;
  while (shown.length > same) body.lastElementChild.remove();
  body.append(...item.blocks.slice(same).map(block));
  if (details) {
    const thought = details.querySelector(".thought");
    if (thought.shownLength !== item.reasoning.length) {
      thought.textContent = item.reasoning;
      thought.shownLength = item.reasoning.length;
    }
    details.querySelector("summary").textContent = reasoningLabel(item);
  }
  if (item.interrupted && !node.querySelector(":scope > .cut")) body.after(element("div", { class: "cut" }, "cut short"));
  if (!item.streaming && !node.querySelector(":scope > .fork-here")) node.append(forkButton(item));
  return true;
}

function forkButton(item) {
  return element(
    "button",
    {
      type: "button",
      class: "fork-here",
      title: "A new session with the conversation up to here",
      onclick: (event) => event.target.dispatchEvent(new CustomEvent("dsh-fork", { bubbles: true, detail: { itemId: item.id } })),
    },
    "Fork from here",
  );
}

// Copy buttons of code blocks: the block's text, whatever the page's origin allows.
document.addEventListener("click", async (event) => {
  const button = event.target.closest?.(".code .copy");
  if (!button) return;
  const text = button.closest(".code").querySelector("code").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = element("textarea", { class: "offscreen" });
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = "Copy"), 1500);
});

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
        element("pre", { class: "output" }, view.arguments || item.arguments),
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
    firstLine(view.arguments || item.arguments);
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

const REASONS = {
  aborted: "Cancelled",
  blocked: "Blocked",
  error: "Failed",
  "max-tokens": "Stopped at the output limit",
  interrupted: "Interrupted when the host stopped",
};

const CAUSES = { user: "by you", parent: "by the agent that started it", hook: "by a hook", disposed: "because the host stopped it" };

// Failures a person can act on, in their words; the provider's own text stays on hover.
const PLAIN = {
  MISSING_CREDENTIAL: "No API key for this model: add one in Settings (⚙).",
  INVALID_CREDENTIAL: "The API key cannot be sent as it is: set it again in Settings (⚙).",
  AUTH: "The provider refused the API key: check it in Settings (⚙).",
  QUOTA: "The provider's quota or balance is used up.",
  TRANSPORT: "The model could not be reached: check its endpoint in Settings (⚙) and the network.",
  CONTEXT_WINDOW_EXCEEDED: "The conversation no longer fits the model's window: /compact it or fork from an earlier answer.",
};

export function seconds(ms) {
  return ms >= 10000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}

export function tokens(count) {
  const short = (value, unit) => `${value.toFixed(1).replace(/\.0$/, "")}${unit}`;
  if (count >= 1_000_000) return short(count / 1_000_000, "M");
  if (count >= 1000) return short(count / 1000, "k");
  return String(count);
}

// A finished turn's time, its time to the first token and the answer's speed.
function turnStats(stats) {
  if (!stats) return null;
  const parts = [seconds(stats.durationMs)];
  if (stats.ttftMs !== undefined) parts.push(`first token ${seconds(stats.ttftMs)}`);
  if (stats.tokensPerSecond) parts.push(`${Math.round(stats.tokensPerSecond)} tok/s`);
  if (stats.outputTokens) parts.push(`${tokens(stats.outputTokens)} tokens`);
  return element("span", { class: "turn-stats" }, parts.join(" · "));
}

// The files a turn wrote or edited; each opens the card of its last change.
function producedChips(item) {
  if (!item.produced?.length) return null;
  return element(
    "div",
    { class: "produced" },
    element("span", { class: "muted" }, "Produced:"),
    ...item.produced.map((path) =>
      element(
        "button",
        {
          type: "button",
          class: "chip",
          title: path,
          onclick: () => {
            const cards = document.querySelectorAll(`#items [data-path="${CSS.escape(path)}"]`);
            const card = cards[cards.length - 1];
            if (!card) return;
            card.open = true;
            card.scrollIntoView({ block: "center", behavior: "smooth" });
          },
        },
        path.split("/").pop(),
      ),
    ),
  );
}

function turnEnd(item) {
  const reason = item.reason || {};
  if (reason.kind === "completed") return element("div", { class: "turn-end" }, producedChips(item), turnStats(item.stats));
  let detail = "";
  let raw = null;
  if (reason.error) {
    raw = `${reason.error.code}: ${reason.error.message}`;
    detail = PLAIN[reason.error.code] || raw;
  }
  else if (reason.kind === "aborted") detail = CAUSES[reason.reason?.kind] || reason.reason?.kind || "";
  else if (typeof reason.reason === "string") detail = reason.reason;
  const level = reason.kind === "aborted" ? "info" : "error";
  return element(
    "div",
    { class: `notice ${level} turn-stop`, role: "status", title: raw },
    element("strong", {}, REASONS[reason.kind] || reason.kind || "Ended"),
    detail ? ` ${detail}` : "",
    producedChips(item),
    turnStats(item.stats),
  );
}

export function renderItem(item) {
  let node;
  switch (item.kind) {
    case "user":
      node = element("div", { class: "message user" }, element("div", { class: "bubble" }, item.text));
      break;
    case "assistant":
      node = element(
        "div",
        { class: item.streaming ? "message assistant streaming" : "message assistant" },
        item.reasoning
          ? element("details", { class: "reasoning" }, element("summary", {}, reasoningLabel(item)), element("div", { class: "thought" }, item.reasoning))
          : null,
        answerBody(item),
        item.interrupted ? element("div", { class: "cut" }, "cut short") : null,
        item.streaming ? null : forkButton(item),
      );
      break;
    case "tool": {
      const { what, status, failed } = toolLine(item);
      node = element(
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
      break;
    }
    case "turn-end":
      node = turnEnd(item);
      break;
    case "approval": {
      const answer = (outcome, scope) => (event) =>
        event.target.dispatchEvent(
          new CustomEvent("dsh-answer", { bubbles: true, detail: { approvalId: item.id, outcome, scope } }),
        );
      const decided = { "allowed-once": "Allowed once", rejected: "Rejected", cancelled: "Cancelled", unavailable: "No answer: refused" };
      const reach = { session: "Allowed for this session", always: "Always allowed" };
      node = element(
        "div",
        { class: item.outcome ? "approval decided" : "approval pending", role: item.outcome ? null : "alertdialog", "aria-label": `Approve ${item.toolName}?` },
        element("div", { class: "approval-ask" }, element("strong", {}, `Run ${item.toolName}?`), item.reason ? ` ${item.reason}` : ""),
        item.outcome
          ? element("div", { class: "approval-outcome" }, reach[item.scope] || decided[item.outcome] || item.outcome)
          : element(
              "div",
              { class: "approval-actions" },
              element("button", { type: "button", class: "allow", onclick: answer("allowed-once"), "aria-keyshortcuts": "Y", title: "Y" }, "Allow once"),
              item.callId
                ? element("button", { type: "button", class: "allow-session", title: "This exact call, without asking again in this session (S)", "aria-keyshortcuts": "S", onclick: answer("allowed-once", "session") }, "Allow for session")
                : null,
              item.callId
                ? element("button", { type: "button", class: "allow-always", title: "Writes an allow rule for this exact call to your settings.yaml", onclick: answer("allowed-once", "always") }, "Always allow")
                : null,
              element("button", { type: "button", class: "reject", onclick: answer("rejected"), "aria-keyshortcuts": "N", title: "N" }, "Reject"),
              element("span", { class: "keys muted" }, "Y · S · N"),
            ),
      );
      break;
    }
    case "question":
      node = questionCard(item);
      break;
    case "notice":
      node = element(
        "div",
        { class: `notice ${item.level}`, role: "status" },
        item.text,
        // A model that cannot be reached: the settings are where its endpoint and key are.
        item.id.startsWith("retry-")
          ? element(
              "button",
              {
                type: "button",
                class: "link notice-action",
                onclick: (event) => event.target.dispatchEvent(new CustomEvent("dsh-settings", { bubbles: true })),
              },
              "Open settings",
            )
          : null,
      );
      break;
    default:
      node = element("div", { class: "notice" }, `(${item.kind})`);
  }
  node.dataset.item = item.id;
  if (item.kind === "tool" && item.view?.kind === "diff") node.dataset.path = item.view.path;
  return node;
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
function questionCard(item) {
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
