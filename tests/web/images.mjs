// The pasted-image scenario of the browser app (merged into scenarios.mjs): an image pasted
// into the prompt waits in the tray as a thumbnail, opens large in the lightbox and closes on
// Escape, and is sent with the prompt (the tray empties; the host checks what the model got);
// the sent prompt shows it, read back from the store, after a reload too.
// Screenshots: the tray, the lightbox, the sent prompt.

const RED_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

export function imageScenarios({ authUrl, expect, shoot, themes }) {
  return {
    async images(page) {
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.evaluate((data) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], "red.png", { type: "image/png" }));
        const paste = new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true });
        document.getElementById("prompt").dispatchEvent(paste);
      }, RED_PNG);
      await page.waitForSelector("#image-tray:not([hidden]) img.thumb");
      const title = await page.getAttribute("#image-tray img.thumb", "title");
      expect(title === "red.png", `the thumbnail is named "${title}"`);
      await page.fill("#prompt", "What is in this image?");
      await themes(page, "tray");
      await page.click("#image-tray img.thumb");
      await page.waitForSelector(".lightbox img");
      const caption = await page.textContent(".lightbox-name");
      expect(caption === "red.png", `the lightbox says "${caption}"`);
      await shoot(page, "lightbox");
      await page.keyboard.press("Escape");
      await page.waitForSelector(".lightbox", { state: "detached" });
      await page.click("#prompt");
      await page.keyboard.press("Enter");
      await page.waitForSelector(".message.user .bubble");
      await page.waitForFunction(() =>
        [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes("A red pixel")),
      );
      await page.waitForSelector("#image-tray", { state: "hidden" });
      // The sent prompt shows its image, read back from the store, through a reload too.
      await page.waitForSelector('.message.user .sent-images img.thumb[src^="data:image/png"]');
      await shoot(page, "sent");
      await page.reload();
      await page.waitForSelector('.message.user .sent-images img.thumb[src^="data:image/png"]');
      await page.click(".message.user .sent-images img.thumb");
      await page.waitForSelector(".lightbox img");
      await page.keyboard.press("Escape");
    },
  };
}
