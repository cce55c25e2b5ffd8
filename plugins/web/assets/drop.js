// Files dropped on the composer or pasted into it: an image goes to `onImages` (the tray of
// attachments.js), a text file is written into the prompt as a fenced block named after it
// (what the model then reads); anything else is refused with a word of why.

const MOST_BYTES = 100 * 1024;

function fence(name, text) {
  const language = name.includes(".") ? name.split(".").pop() : "";
  // A fence longer than any run of backticks inside the text, so the text cannot close it.
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((run) => run[0].length));
  const marks = "`".repeat(Math.max(3, longest + 1));
  return `${marks}${language} ${name}\n${text.replace(/\n$/, "")}\n${marks}\n`;
}

async function asText(file) {
  if (file.size > MOST_BYTES) return { refused: `${file.name} is larger than 100 KB` };
  const bytes = new Uint8Array(await file.arrayBuffer());
  if (bytes.includes(0)) return { refused: `${file.name} is not text` };
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { refused: `${file.name} is not UTF-8 text` };
  }
}

export function wireDrop({ input, target, onChange, tell, isImage, onImages }) {
  const take = async (files) => {
    const images = isImage ? files.filter(isImage) : [];
    if (images.length) await onImages(images);
    const blocks = [];
    for (const file of files.filter((file) => !images.includes(file))) {
      const read = await asText(file);
      if (read.refused) tell(`${read.refused}: only text files and PNG, JPEG, WebP or GIF images can be added to a prompt.`);
      else blocks.push(fence(file.name, read.text));
    }
    if (!blocks.length) return;
    const at = input.selectionStart ?? input.value.length;
    const before = input.value.slice(0, at);
    const joined = (before && !before.endsWith("\n") ? "\n" : "") + blocks.join("\n");
    input.value = before + joined + input.value.slice(at);
    input.focus();
    onChange();
  };
  target.addEventListener("dragover", (event) => {
    if (!event.dataTransfer?.types.includes("Files")) return;
    event.preventDefault();
    target.classList.add("dropping");
  });
  target.addEventListener("dragleave", () => target.classList.remove("dropping"));
  target.addEventListener("drop", (event) => {
    target.classList.remove("dropping");
    if (!event.dataTransfer?.files.length) return;
    event.preventDefault();
    take([...event.dataTransfer.files]);
  });
  input.addEventListener("paste", (event) => {
    const files = [...(event.clipboardData?.files || [])];
    if (!files.length) return;
    event.preventDefault();
    take(files);
  });
}
