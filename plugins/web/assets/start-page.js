// The start page (what to do first: a key, the offline demo, a prompt) and the banner that asks
// whether to trust a project's own configuration.

import { element } from "./render.js";
import { $, call, fail, state, toast } from "./core.js";
import { loadModels, startDemo } from "./composer.js";

export function renderHero(host) {
  $("version").textContent = `v${host.version}`;
  const facts = element(
    "dl",
    { class: "facts" },
    element("dt", {}, "Directory"), element("dd", {}, host.cwd || "-"),
    element("dt", {}, "Model"), element("dd", {}, host.defaultModel || "none"),
  );
  const next = host.defaultModel
    ? element("p", { class: "muted", id: "ready" }, "Type a task below to start a session, or pick one on the left.")
    : onboarding();
  $("hero").replaceChildren(element("h1", {}, "What should the agent do?"), facts, presetPicker(), next);
  loadPresets();
}

// The agent preset a new session runs: one chip per preset (shipped ones, then the user's from
// $DSH_HOME/agent-presets), the default chosen. A broken preset is shown disabled, its problem
// (file and field) as its title. Arrow keys move the choice, as in any radio group.
function presetPicker() {
  return element("div", { class: "presets", id: "presets", role: "radiogroup", "aria-label": "Agent preset", hidden: true });
}

function choosePreset(id) {
  state.agentPreset = id;
  for (const chip of $("presets").children) {
    const chosen = chip.dataset.preset === id;
    chip.setAttribute("aria-checked", String(chosen));
    chip.tabIndex = chosen ? 0 : -1;
  }
}

async function loadPresets() {
  let list;
  try {
    list = await call("agentPreset.list");
  } catch {
    return; // No presets row: sessions run the plain agent and nothing is offered.
  }
  const group = $("presets");
  if (!group) return;
  const usable = list.presets.filter((preset) => !preset.problem);
  if (!usable.some((preset) => preset.id === state.agentPreset)) state.agentPreset = list.default;
  group.replaceChildren(...list.presets.map((preset) => element(
    "button",
    {
      type: "button",
      class: "chip preset-chip",
      role: "radio",
      "data-preset": preset.id,
      title: preset.problem || preset.description,
      disabled: Boolean(preset.problem),
      onclick: () => choosePreset(preset.id),
    },
    preset.name,
  )));
  group.onkeydown = (event) => {
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[event.key];
    if (!step) return;
    event.preventDefault();
    const at = usable.findIndex((preset) => preset.id === state.agentPreset);
    const next = usable[(at + step + usable.length) % usable.length];
    choosePreset(next.id);
    group.querySelector(`[data-preset="${next.id}"]`)?.focus();
  };
  choosePreset(state.agentPreset);
  group.hidden = false;
}

// No usable model: a DeepSeek key entered here is stored by the host (readable by its owner
// only) and used from the next request on; an OpenAI-compatible base URL given with it sends
// the requests there instead (the same wire, written to settings.yaml).
function onboarding() {
  const input = element("input", { id: "api-key", type: "password", autocomplete: "off", placeholder: "sk-…", "aria-label": "API key", required: true });
  const endpoint = element("input", { id: "onboarding-url", type: "url", autocomplete: "off", placeholder: "https://api.deepseek.com (default)", "aria-label": "OpenAI-compatible base URL (optional)" });
  const form = element(
    "form",
    { class: "notice warning onboarding", id: "onboarding" },
    element("p", {}, element("strong", {}, "No model is configured yet."), " Enter a DeepSeek API key, or the key and base URL of any OpenAI-compatible endpoint; or start the host with ", element("code", {}, "DEEPSEEK_API_KEY"), " set."),
    element("div", { class: "row" }, input, element("button", { type: "submit" }, "Save")),
    element("div", { class: "row" }, endpoint),
    state.host.demo
      ? element(
          "p",
          { class: "demo" },
          "Or ",
          element("button", { type: "button", id: "demo", class: "link", onclick: startDemo }, "open the offline demo"),
          ": a recorded session replayed in place of the model (no key, no network); its shell command runs for real.",
        )
      : null,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      if (endpoint.value.trim()) await call("settings.update", { baseUrl: endpoint.value.trim() });
      await call("credentials.set", { name: "DEEPSEEK_API_KEY", value: input.value });
      input.value = "";
      state.host = await call("host.describe");
      renderHero(state.host);
      await loadModels();
    } catch (error) {
      fail(error);
    }
  });
  return form;
}

// A project's own configuration (its .mcp.json servers, hook files, .dsh/settings.yaml,
// skills) waits until the person trusts the folder: asked once here, remembered by the host.
export async function refreshTrust() {
  const banner = $("trust");
  let project;
  try {
    project = await call("project.describe");
  } catch {
    banner.hidden = true;
    return;
  }
  if (project.trusted || !(project.waiting || []).length) {
    banner.hidden = true;
    return;
  }
  const trust = element("button", { type: "button", id: "trust-yes" }, "Trust this folder");
  const later = element("button", { type: "button", class: "secondary", id: "trust-no" }, "Not now");
  trust.addEventListener("click", async () => {
    trust.disabled = true;
    try {
      await call("project.trust");
      banner.hidden = true;
      toast("Trusted: the folder's own servers, hooks, settings and skills apply from now on.");
    } catch (error) {
      trust.disabled = false;
      fail(error);
    }
  });
  later.addEventListener("click", () => { banner.hidden = true; });
  banner.replaceChildren(
    element("p", {}, element("strong", {}, "This folder's own configuration is waiting for your trust: "),
      ...project.waiting.flatMap((name, index) => (index ? [", ", element("code", {}, name)] : [element("code", {}, name)])),
      ". Its MCP servers and hooks run commands, and its settings and skills steer the agent. Trust it only if you trust who wrote ",
      element("code", {}, project.root), "."),
    element("div", { class: "row" }, trust, later),
  );
  banner.hidden = false;
}
