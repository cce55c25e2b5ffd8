// A small popup menu (role menu) beside the button that opened it: arrows move through its
// items, Enter or a click takes one, Escape or a click elsewhere closes it and gives the focus
// back to the button.

import { element } from "./render.js";

let open = null;

function close() {
  if (!open) return;
  const { node, anchor } = open;
  open = null;
  node.remove();
  anchor.setAttribute("aria-expanded", "false");
  anchor.focus();
}

// `items`: [{ label, run, danger? }]
export function showMenu(anchor, label, items) {
  close();
  const buttons = items.map(({ label: text, run, danger }) =>
    element(
      "button",
      {
        type: "button",
        role: "menuitem",
        class: danger ? "danger" : null,
        tabindex: "-1",
        onclick: (event) => {
          event.stopPropagation();
          close();
          run();
        },
      },
      text,
    ),
  );
  const node = element("div", { class: "popup-menu", role: "menu", "aria-label": label }, ...buttons);
  node.addEventListener("keydown", (event) => {
    const at = buttons.indexOf(document.activeElement);
    const step = { ArrowDown: 1, ArrowUp: -1 }[event.key];
    if (step) {
      event.preventDefault();
      buttons[(at + step + buttons.length) % buttons.length].focus();
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close();
    } else if (event.key === "Tab") {
      close();
    }
  });
  document.body.append(node);
  const box = anchor.getBoundingClientRect();
  const width = node.offsetWidth;
  node.style.top = `${Math.min(box.bottom + 4, window.innerHeight - node.offsetHeight - 8)}px`;
  node.style.left = `${Math.max(8, Math.min(box.right - width, window.innerWidth - width - 8))}px`;
  anchor.setAttribute("aria-expanded", "true");
  open = { node, anchor };
  buttons[0]?.focus();
}

document.addEventListener("click", (event) => {
  if (open && !open.node.contains(event.target) && event.target !== open.anchor) close();
});
