// A small markdown renderer that builds DOM nodes with textContent only, so model output can
// never inject markup: fenced code blocks, headings, lists, block quotes, paragraphs, and inline
// code, bold, italic and links (http and https only; images are shown as their text, never
// loaded).

function inline(text) {
  const fragment = document.createDocumentFragment();
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\((https?:\/\/[^)\s]+)\))/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) fragment.append(text.slice(last, match.index));
    const token = match[0];
    let node;
    if (match[1]) {
      node = document.createElement("code");
      node.textContent = token.slice(1, -1);
    } else if (match[2]) {
      node = document.createElement("strong");
      node.textContent = token.slice(2, -2);
    } else if (match[3]) {
      node = document.createElement("em");
      node.textContent = token.slice(1, -1);
    } else {
      node = document.createElement("a");
      node.textContent = token.slice(1, token.indexOf("]("));
      node.href = match[5];
      node.rel = "noopener noreferrer";
      node.target = "_blank";
    }
    fragment.append(node);
    last = match.index + token.length;
  }
  if (last < text.length) fragment.append(text.slice(last));
  return fragment;
}

export function renderMarkdown(source) {
  const root = document.createElement("div");
  root.className = "markdown";
  const lines = source.replace(/\r\n/g, "\n").split("\n");
  let paragraph = [];
  let list = null;
  const flush = () => {
    if (paragraph.length) {
      const p = document.createElement("p");
      p.append(inline(paragraph.join(" ")));
      root.append(p);
      paragraph = [];
    }
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^```\s*([\w+-]*)/);
    if (fence) {
      flush();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].startsWith("```")) body.push(lines[i++]);
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      if (fence[1]) code.dataset.lang = fence[1];
      code.textContent = body.join("\n");
      pre.append(code);
      root.append(pre);
      continue;
    }
    const heading = line.match(/^(#{1,4})\s+(.*)$/);
    if (heading) {
      flush();
      const h = document.createElement(`h${heading[1].length + 2}`);
      h.append(inline(heading[2]));
      root.append(h);
      continue;
    }
    const item = line.match(/^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/);
    if (item) {
      if (paragraph.length) flush();
      const ordered = Boolean(item[1]);
      if (!list || (list.tagName === "OL") !== ordered) {
        list = document.createElement(ordered ? "ol" : "ul");
        root.append(list);
      }
      const li = document.createElement("li");
      li.append(inline(item[2]));
      list.append(li);
      continue;
    }
    if (line.startsWith(">")) {
      flush();
      const quote = document.createElement("blockquote");
      quote.append(inline(line.replace(/^>\s?/, "")));
      root.append(quote);
      continue;
    }
    if (line.trim() === "") {
      flush();
      continue;
    }
    list = null;
    paragraph.push(line.trim());
  }
  flush();
  return root;
}
