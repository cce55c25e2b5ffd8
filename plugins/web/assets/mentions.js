// `@` in the composer: typing `@` and the start of a path lists the session folder's files that
// match (the host walks the folder as git lists it); arrows, Tab or Enter and Escape work as in
// the `/` menu, and taking one writes `@path ` into the prompt, where the model reads it.

import { element } from "./render.js";

// The `@word` being typed just before the caret, if any: where it starts and what it says.
function mentionAt(input) {
  const before = input.value.slice(0, input.selectionStart);
  const match = /(^|\s)@([^\s@]*)$/.exec(before);
  if (!match) return null;
  return { start: before.length - match[2].length - 1, query: match[2] };
}

export function wireMentions({ input, menu, call, sessionId, onError }) {
  let timer = null;
  let asked = 0;
  const take = (path) => {
    const mention = mentionAt(input);
    if (!mention) return;
    const end = mention.start + 1 + mention.query.length;
    input.value = `${input.value.slice(0, mention.start)}@${path} ${input.value.slice(end)}`;
    const caret = mention.start + path.length + 2;
    input.setSelectionRange(caret, caret);
    menu.hidden = true;
    menu.classList.remove("files");
    input.focus();
  };
  input.addEventListener("input", () => {
    clearTimeout(timer);
    const mention = mentionAt(input);
    if (!mention || !sessionId()) {
      if (menu.classList.contains("files")) {
        menu.hidden = true;
        menu.classList.remove("files");
      }
      return;
    }
    timer = setTimeout(async () => {
      const ask = ++asked;
      try {
        const { files, partial } = await call("files.complete", { sessionId: sessionId(), query: mention.query });
        // Only the answer to the latest keystroke counts.
        if (ask !== asked || mentionAt(input)?.query !== mention.query) return;
        menu.classList.add("files");
        menu.replaceChildren(
          ...files.map((path) => {
            const row = element("button", { type: "button", class: "command", role: "option", title: path }, element("strong", {}, `@${path}`));
            row.addEventListener("click", () => take(path));
            return row;
          }),
          ...(partial ? [element("div", { class: "muted pad" }, "The folder is large: only part of it was looked at.")] : []),
        );
        menu.hidden = files.length === 0;
      } catch (error) {
        onError(error);
      }
    }, 120);
  });
}
