// Images in the composer: image files pasted into the prompt or dropped on the composer wait
// in a tray of thumbnails above it (each removable, opened large in a lightbox), are uploaded
// with `session.attachment` when the prompt is sent, and ride it as its `images`. The host
// checks each (its type from its bytes, its size, the 2000 px side limit, a model that takes
// images) and a refusal comes back as a toast naming the limit, with the tray kept.

import { element } from "./dom.js";
import { call } from "./core.js";

const TYPES = ["image/png", "image/jpeg", "image/webp", "image/gif"];
const pending = [];
let tray = null;

export function isImage(file) {
  return TYPES.includes(file.type);
}

export function hasImages() {
  return pending.length > 0;
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

function closeLightbox() {
  document.querySelector(".lightbox")?.remove();
}

function openLightbox(image) {
  closeLightbox();
  const box = element(
    "div",
    { class: "lightbox", role: "dialog", "aria-label": image.name },
    element("img", { src: image.dataUrl, alt: image.name }),
    element("div", { class: "lightbox-name" }, image.name),
  );
  box.addEventListener("click", closeLightbox);
  document.body.append(box);
}

function render() {
  if (!tray) return;
  tray.hidden = pending.length === 0;
  tray.replaceChildren(
    ...pending.map((image, index) => {
      const thumb = element("img", { class: "thumb", src: image.dataUrl, alt: image.name, title: image.name });
      thumb.addEventListener("click", () => openLightbox(image));
      const remove = element("button", { type: "button", class: "remove", title: `Remove ${image.name}`, "aria-label": `Remove ${image.name}` }, "×");
      remove.addEventListener("click", () => {
        pending.splice(index, 1);
        render();
      });
      return element("figure", { class: "attached" }, thumb, remove);
    }),
  );
}

// A sent prompt's images in its bubble: thumbnails whose bytes are fetched once each
// (`attachment.read`, by the image's sha256 id), opened in the lightbox on a click.
const loaded = new Map();
export function sentImages(images) {
  return element(
    "div",
    { class: "sent-images" },
    ...images.map((attachment) => {
      const name = attachment.name || `${attachment.width}x${attachment.height} ${attachment.mediaType}`;
      const thumb = element("img", { class: "thumb", alt: name, title: name });
      const id = attachment.attachmentId;
      if (!loaded.has(id)) {
        loaded.set(
          id,
          call("attachment.read", { attachment }).then((read) => `data:${read.mediaType};base64,${read.data}`),
        );
      }
      loaded
        .get(id)
        .then((dataUrl) => {
          thumb.src = dataUrl;
          thumb.addEventListener("click", () => openLightbox({ name, dataUrl }));
        })
        .catch(() => thumb.replaceWith(element("span", { class: "missing-image" }, `[${name}: not available]`)));
      return thumb;
    }),
  );
}

// Adds image files to the tray.
export async function addImages(files) {
  for (const file of files) {
    pending.push({ name: file.name || "pasted image", mediaType: file.type, dataUrl: await readAsDataUrl(file) });
  }
  render();
}

// Uploads the tray's images for `sessionId`; their references, in order.
export async function uploadImages(call, sessionId) {
  const refs = [];
  for (const image of pending) {
    const data = image.dataUrl.slice(image.dataUrl.indexOf(",") + 1);
    refs.push(await call("session.attachment", { sessionId, mediaType: image.mediaType, data, name: image.name }));
  }
  return refs;
}

export function clearImages() {
  pending.length = 0;
  render();
}

export function wireImages(trayElement) {
  tray = trayElement;
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && document.querySelector(".lightbox")) {
      event.preventDefault();
      closeLightbox();
    }
  });
  render();
}
