// The page's smallest helpers: building elements, and times and token counts in words.

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

export function seconds(ms) {
  return ms >= 10000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}

export function tokens(count) {
  const short = (value, unit) => `${value.toFixed(1).replace(/\.0$/, "")}${unit}`;
  if (count >= 1_000_000) return short(count / 1_000_000, "M");
  if (count >= 1000) return short(count / 1000, "k");
  return String(count);
}
