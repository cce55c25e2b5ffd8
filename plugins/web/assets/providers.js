// The Models tab's OpenAI-compatible providers: the ones added here (id, base URL, the key
// masked, the models their endpoint listed), a form to add one or change one, "Find models"
// to ask the endpoint before saving, and removal. The host answers a save once the provider is
// served, so the model picker reloaded after it lists the new models at once.

import { element } from "./render.js";
import { loadModels } from "./composer.js";
import { $, call, state, toast } from "./core.js";

let editing = null; // the id of the provider the form changes, or null when it adds one

function showError(error) {
  const box = $("provider-error");
  if (!error) {
    box.hidden = true;
    box.textContent = "";
    box.removeAttribute("title");
    return;
  }
  // The words for the person, the code on hover (as the toasts do).
  box.textContent = error.message || String(error);
  if (error.code) box.title = error.code;
  box.hidden = false;
}

function modelsLine(models) {
  if (!models.length) return "its endpoint lists no model (any id can still be chosen under Other model…)";
  const shown = models.slice(0, 6).join(", ");
  return `${models.length} model${models.length === 1 ? "" : "s"}: ${shown}${models.length > 6 ? ", …" : ""}`;
}

function row(provider, writable) {
  const actions = writable
    ? element(
        "div",
        { class: "row" },
        element("button", { type: "button", class: "secondary edit", onclick: () => edit(provider) }, "Edit"),
        element("button", { type: "button", class: "secondary danger remove", onclick: () => remove(provider) }, "Remove"),
      )
    : null;
  return element(
    "li",
    { class: "preset provider", "data-provider": provider.id },
    element(
      "div",
      { class: "preset-head" },
      element("strong", {}, provider.id),
      " ",
      element("code", { class: "provider-url" }, provider.baseUrl),
      provider.served ? null : element("span", { class: "fork-mark" }, "loading"),
    ),
    element("div", { class: "muted small provider-key" }, provider.apiKey ? `key ${provider.apiKey}` : "no key stored"),
    element("div", { class: "muted small provider-models" }, modelsLine(provider.models)),
    actions,
  );
}

function resetForm() {
  editing = null;
  $("provider-id").value = "";
  $("provider-id").readOnly = false;
  $("provider-url").value = "";
  $("provider-key").value = "";
  $("provider-key-state").textContent = "";
  $("provider-save").textContent = "Add provider";
  $("provider-form-title").textContent = "Add a provider";
  $("provider-cancel").hidden = true;
  $("provider-found").textContent = "";
  showError(null);
}

export async function renderProviderSettings() {
  const list = await call("provider.list").catch(() => null);
  const pane = $("provider-list");
  const writable = Boolean(list?.writable);
  if (!list) {
    pane.replaceChildren(element("li", { class: "muted small" }, "This host does not keep providers."));
  } else if (!list.providers.length) {
    pane.replaceChildren(element("li", { class: "muted small" }, "None yet: add Ollama, vLLM, llama.cpp's server, OpenRouter or any OpenAI-compatible API below."));
  } else {
    pane.replaceChildren(...list.providers.map((provider) => row(provider, writable)));
  }
  $("provider-form").hidden = !writable;
}

function edit(provider) {
  resetForm();
  editing = provider.id;
  $("provider-id").value = provider.id;
  $("provider-id").readOnly = true;
  $("provider-url").value = provider.baseUrl;
  $("provider-key-state").textContent = provider.apiKey ? `(${provider.apiKey} kept unless you type another)` : "";
  $("provider-save").textContent = "Save changes";
  $("provider-form-title").textContent = `Change ${provider.id}`;
  $("provider-cancel").hidden = false;
  $("provider-url").focus();
}

// The form's values as the methods take them; a blank key is left out (an edit keeps the
// stored one).
function form() {
  const key = $("provider-key").value.trim();
  return {
    id: $("provider-id").value.trim(),
    baseUrl: $("provider-url").value.trim(),
    ...(key ? { apiKey: key } : {}),
  };
}

async function discover() {
  showError(null);
  $("provider-found").textContent = "Asking the endpoint…";
  try {
    const { id, baseUrl, apiKey } = form();
    const found = await call("provider.discover", { baseUrl, ...(apiKey ? { apiKey } : editing ? { id } : {}) });
    $("provider-found").textContent = `It lists ${modelsLine(found.models).replace(/^\d+ models?: /, "")}.`;
  } catch (error) {
    $("provider-found").textContent = "";
    showError(error);
  }
}

async function save() {
  showError(null);
  const wasEditing = editing;
  $("provider-save").disabled = true;
  $("provider-found").textContent = "Asking the endpoint for its models…";
  try {
    const values = form();
    const saved = await call("provider.save", { ...values, edit: Boolean(wasEditing) });
    resetForm();
    toast(`${values.id}: ${modelsLine(saved.models)}. Choose one in the model picker.`);
    await loadModels(state.open?.id).catch(() => {});
    await renderProviderSettings();
    document.dispatchEvent(new CustomEvent("dsh-models-changed"));
  } catch (error) {
    $("provider-found").textContent = "";
    showError(error);
  } finally {
    $("provider-save").disabled = false;
  }
}

async function remove(provider) {
  if (!window.confirm(`Remove the provider ${provider.id} and its stored key?`)) return;
  try {
    await call("provider.remove", { id: provider.id });
    if (editing === provider.id) resetForm();
    toast(`${provider.id} is removed.`);
    await loadModels(state.open?.id).catch(() => {});
    await renderProviderSettings();
    document.dispatchEvent(new CustomEvent("dsh-models-changed"));
  } catch (error) {
    showError(error);
  }
}

export function wireProviders() {
  $("provider-discover").addEventListener("click", discover);
  $("provider-save").addEventListener("click", save);
  $("provider-cancel").addEventListener("click", resetForm);
  for (const id of ["provider-id", "provider-url", "provider-key"]) {
    $(id).addEventListener("keydown", (event) => {
      // Enter saves rather than submitting (closing) the settings dialog.
      if (event.key === "Enter") {
        event.preventDefault();
        save();
      }
    });
  }
}
