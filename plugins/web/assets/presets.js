// The settings' Presets tab: the agent presets this host offers (shipped ones read-only, the
// user's from $DSH_HOME/agent-presets), which one new sessions run, a copy to edit, and removal
// of the user's own. A broken preset shows its problem (the file and the field).

import { element } from "./render.js";
import { $, call, fail, state, toast } from "./core.js";

// Waits until the host has reloaded the presets row with `want` as its default (the settings
// document is applied by the host's watcher, not by the call).
async function defaultBecomes(want) {
  for (let tries = 0; tries < 50; tries += 1) {
    const list = await call("agentPreset.list");
    if (list.default === want) return list;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the default preset did not become ${want}`);
}

function row(preset, writable) {
  const actions = [];
  if (writable && !preset.problem && !preset.default) {
    actions.push(element("button", { type: "button", class: "secondary make-default", onclick: () => makeDefault(preset.id) }, "Make default"));
  }
  if (writable && !preset.problem) {
    actions.push(element("button", { type: "button", class: "secondary copy", onclick: () => copy(preset) }, "Copy…"));
  }
  if (writable && preset.source === "user" && !preset.default) {
    actions.push(element("button", { type: "button", class: "secondary danger remove", onclick: () => remove(preset) }, "Delete"));
  }
  return element(
    "li",
    { class: `preset${preset.problem ? " broken" : ""}`, "data-preset": preset.id },
    element(
      "div",
      { class: "preset-head" },
      element("strong", {}, preset.name),
      " ",
      element("code", {}, preset.id),
      preset.default ? element("span", { class: "fork-mark" }, "default") : null,
      preset.source === "user" ? element("span", { class: "fork-mark" }, "yours") : null,
    ),
    preset.problem
      ? element("div", { class: "plugin-error" }, preset.problem)
      : element("div", { class: "muted small" }, preset.description || ""),
    actions.length ? element("div", { class: "row" }, ...actions) : null,
  );
}

export async function renderPresetSettings(writable) {
  const list = await call("agentPreset.list").catch(() => null);
  const pane = $("preset-list");
  if (!list) {
    pane.replaceChildren(element("li", { class: "muted" }, "This host mounts no agent presets."));
    return;
  }
  pane.replaceChildren(...list.presets.map((preset) => row(preset, writable)));
  $("preset-note").textContent = writable
    ? "A copy is a folder under $DSH_HOME/agent-presets (preset.yml, agent.yml) to edit; the default is what new sessions run."
    : "This server listens beyond this machine: presets cannot be changed from here.";
}

async function refresh(message) {
  toast(message);
  state.agentPreset = undefined;
  await renderPresetSettings(true);
}

async function makeDefault(id) {
  try {
    await call("agentPreset.setDefault", { presetId: id });
    await defaultBecomes(id);
    await refresh(`New sessions now run ${id}.`);
  } catch (error) {
    fail(error);
  }
}

async function copy(preset) {
  const to = window.prompt(`Copy ${preset.name} as (an id: lowercase letters, digits, dashes)`, `my-${preset.id}`);
  if (!to) return;
  try {
    await call("agentPreset.copy", { from: preset.id, to, name: `${preset.name} (copy)` });
    await refresh(`Copied to ${to}: edit $DSH_HOME/agent-presets/${to}.`);
  } catch (error) {
    fail(error);
  }
}

async function remove(preset) {
  if (!window.confirm(`Delete the preset ${preset.name} (its folder)?`)) return;
  try {
    await call("agentPreset.remove", { presetId: preset.id });
    await refresh(`${preset.name} is deleted.`);
  } catch (error) {
    fail(error);
  }
}
