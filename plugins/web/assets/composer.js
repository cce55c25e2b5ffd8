// The composer: the prompt box and what it sends, the `/` menu, the model and permission
// controls, renaming and deleting the open session.

import { wireDrop } from "./drop.js";
import { addImages, clearImages, hasImages, isImage, uploadImages, wireImages } from "./attachments.js";
import { wireMentions } from "./mentions.js";
import { showMenu } from "./menu.js";
import { applyPlanChoice, showPlanChip, wirePlanChip } from "./plan.js";
import { element, inspection, renderItem } from "./render.js";
import { followLatest, fork, markDirty, openSession, showView } from "./app.js";
import { $, call, fail, state, toast } from "./core.js";
import { cycleTheme, enterWhileBusy, openSettings } from "./settings.js";
import { refreshSessions, searchChanged, sessionActions } from "./sidebar.js";

// ---- the composer ------------------------------------------------------------------------

export async function loadModels(sessionId) {
  const { models, current, effort } = await call("session.models", sessionId ? { sessionId } : {});
  state.models = models;
  showEfforts(current, effort);
  const select = $("model");
  const option = (model) => element("option", { value: model.route, selected: model.route === current }, model.label);
  // With more than one provider (one added in Settings › Models), each has its group, so two
  // providers' models of one name are told apart.
  const providers = [...new Set(models.map((model) => model.route.split("/")[0]))];
  select.replaceChildren(
    ...(providers.length > 1
      ? providers.map((provider) =>
          element("optgroup", { label: provider }, ...models.filter((model) => model.route.startsWith(`${provider}/`)).map(option)),
        )
      : models.map(option)),
  );
  if (current && !models.some((model) => model.route === current)) {
    select.prepend(element("option", { value: current, selected: true }, current));
  }
  // Endpoints serve models no catalog lists (Ollama, vLLM): any id of a provider can be typed.
  if (models.length) select.append(element("option", { value: OTHER_MODEL }, "Other model…"));
  select.hidden = select.options.length === 0;
}

const OTHER_MODEL = "\u0000other";

// The reasoning efforts of `route`'s model, where it offers a choice (DeepSeek: off, low,
// high, max), `chosen` or the model's default selected; hidden for a model without one.
function showEfforts(route, chosen) {
  const select = $("effort");
  const model = (state.models || []).find((entry) => entry.route === route);
  const efforts = model?.efforts || [];
  const selected = chosen || model?.defaultEffort;
  select.replaceChildren(
    ...efforts.map((id) =>
      element("option", { value: id, selected: id === selected }, id === model.defaultEffort ? `${id} (default)` : id),
    ),
  );
  select.hidden = efforts.length === 0 || !state.open;
}

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
export function showControls({ model, preset, plan }) {
  if (preset) $("preset").value = preset;
  if (plan) showPlanChip(plan === "on");
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
  const agentPreset = chosen ? state.agentPreset : undefined;
  const { sessionId } = await call("session.create", { ...(model ? { model } : {}), ...(agentPreset ? { agentPreset } : {}) });
  if (preset !== "workspace-write") await call("session.setPermission", { sessionId, preset });
  if (chosen) await applyPlanChoice(sessionId);
  await refreshSessions();
  await openSession(sessionId);
}

export async function send(mode) {
  const input = $("prompt");
  const text = input.value;
  if (!text.trim() && !hasImages()) return;
  state.lastPrompt = text;
  if (!state.open) await newSession({ chosen: true });
  input.value = "";
  autosize();
  $("command-menu").hidden = true;
  $("command-menu").classList.remove("files");
  // Sending means wanting to see the answer: follow it even from further up.
  followLatest();
  try {
    // Pasted and dropped images are uploaded now, for the session they are sent to.
    const images = hasImages() ? await uploadImages(call, state.open.id) : [];
    const accepted = await call("session.prompt", { sessionId: state.open.id, text, mode, clientRequestId: crypto.randomUUID(), images });
    clearImages();
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
export function renameInline() {
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
export async function deleteWithUndo() {
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

export function wireComposer() {
  const input = $("prompt");
  input.addEventListener("input", autosize);
  wireMentions({ input, menu: $("command-menu"), call, sessionId: () => state.open?.id, onError: fail });
  wireDrop({ input, target: $("composer"), onChange: autosize, tell: (text) => toast(text), isImage, onImages: addImages });
  wireImages($("image-tray"));
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
  wirePlanChip();
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
    showEfforts($("model").value, undefined);
    call("session.selectModel", { sessionId: state.open.id, model: $("model").value }).catch((e) => fail(e));
  });
  $("effort").addEventListener("change", () => {
    if (!state.open) return;
    const effort = $("effort").value;
    call("session.selectModel", { sessionId: state.open.id, model: $("model").value, effort })
      .then(() => toast(`Reasoning effort: ${effort}, from the next request.`))
      .catch((e) => fail(e));
  });
}

export async function startDemo() {
  try {
    const { sessionId } = await call("session.demo", {});
    await refreshSessions();
    await openSession(sessionId);
  } catch (error) {
    fail(error);
  }
}
