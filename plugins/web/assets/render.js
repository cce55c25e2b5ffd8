// Chat items to DOM: one element per item, keyed by the item's id, rebuilt whole when the item
// changes. An answer's Markdown arrives rendered by the host (sanitized there: no markup of the
// model's own survives) in blocks; while it streams only its changed blocks are replaced, once
// per animation frame.

import { element, seconds, tokens } from "./dom.js";
import { questionCard, toolCard } from "./cards.js";
import { planCard } from "./plan.js";
import { sentImages } from "./attachments.js";

export { element, seconds, tokens } from "./dom.js";
export { inspection } from "./cards.js";


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
  showRawTail(body, item);
  return body;
}

// Text appended to a streaming answer that its blocks do not render yet: the host stops
// re-rendering an open tail once it is long (it would send the whole tail per chunk), so the
// appended text is shown as text where the last block ends (inside its last paragraph, list
// item or code, never in a button), until a block settles or the answer ends.
function showRawTail(body, item) {
  body.querySelector(".raw-tail")?.remove();
  if (!item.rawTail || !item.blocks?.length || !body.lastElementChild) return;
  lastPlace(body.lastElementChild).append(element("span", { class: "raw-tail" }, item.rawTail));
}

const CONTAINERS = new Set(["DIV", "PRE", "BLOCKQUOTE", "UL", "OL", "LI", "P", "TABLE", "THEAD", "TBODY", "TR", "TD", "TH", "H1", "H2", "H3", "H4", "H5", "H6"]);

// The element where a block's text ends: down its last child (blank text aside) while that is
// a block-level container, or the code of a <pre>; not into inline markup or a button.
function lastPlace(node) {
  for (;;) {
    let child = node.lastChild;
    while (child && child.nodeType === Node.TEXT_NODE && !child.textContent.trim()) child = child.previousSibling;
    const inside = child?.nodeType === Node.ELEMENT_NODE && (CONTAINERS.has(child.tagName) || (child.tagName === "CODE" && node.tagName === "PRE"));
    if (!inside) return node;
    node = child;
  }
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
  showRawTail(body, item);
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
      node = element(
        "div",
        { class: "message user" },
        element("div", { class: "bubble" }, item.text),
        item.images?.length ? sentImages(item.images) : null,
      );
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
    case "tool":
      node = toolCard(item);
      break;
    case "turn-end":
      node = turnEnd(item);
      break;
    case "approval": {
      if (item.toolName === "exit_plan_mode") {
        node = planCard(item);
        break;
      }
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
