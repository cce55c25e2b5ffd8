// The providers scenario of the browser app (merged into scenarios.mjs): in Settings › Models a
// person adds an OpenAI-compatible provider (a second fake server, DSH_PROVIDER_URL), asks it
// for its models, is told by name what is wrong with a bad address, saves it and sees its key
// masked; the model picker then offers the provider's models in a group of their own, and a
// first prompt with one chosen is answered by that endpoint; removed, the picker drops them.

export function providerScenarios({ authUrl, expect, shoot, themes }) {
  return {
    async providers(page) {
      const base = `${process.env.DSH_PROVIDER_URL}/v1`;
      const key = process.env.DSH_PROVIDER_KEY;
      await page.goto(authUrl);
      await page.waitForSelector(".hero h1");
      await page.click("#open-settings");
      await page.click("#tab-models");
      await page.waitForSelector("#provider-list li");
      await page.fill("#provider-id", "local");
      await page.fill("#provider-url", "localhost:1234/v1");
      await page.fill("#provider-key", key);
      await page.click("#provider-save");
      await page.waitForSelector("#provider-error:not([hidden])");
      const why = await page.textContent("#provider-error");
      expect(why.includes("baseUrl `localhost:1234/v1`"), `a bad address is named: ${why}`);
      expect((await page.getAttribute("#provider-error", "title")) === "provider-rejected", "the code is on hover");
      await themes(page, "bad-url");
      await page.fill("#provider-url", base);
      await page.click("#provider-discover");
      await page.waitForFunction(() => document.querySelector("#provider-found").textContent.includes("qwen-local"));
      expect(await page.isHidden("#provider-error"), "the error is gone once the address works");
      await page.click("#provider-save");
      await page.waitForSelector('#provider-list [data-provider="local"]');
      const shown = await page.textContent('#provider-list [data-provider="local"]');
      expect(shown.includes("qwen-local") && shown.includes("llama-local"), `its models are listed: ${shown}`);
      expect(shown.includes(`••••${key.slice(-4)}`), `its key is shown masked: ${shown}`);
      expect(!(await page.content()).includes(key), "the key is nowhere in the page");
      const listed = await page.locator("#model-list code").allTextContents();
      expect(listed.includes("local/qwen-local"), `the settings' model list has it: ${listed}`);
      await themes(page, "saved");
      await page.setViewportSize({ width: 390, height: 844 });
      const overflow = await page.evaluate(() => {
        const dialog = document.querySelector("#settings");
        return Math.max(document.scrollingElement.scrollWidth - window.innerWidth, dialog.scrollWidth - dialog.clientWidth);
      });
      expect(overflow <= 0, `the settings overflow sideways by ${overflow}px at 390 px`);
      await page.locator('#provider-list [data-provider="local"]').scrollIntoViewIfNeeded();
      await themes(page, "saved-390");
      await page.setViewportSize({ width: 1280, height: 800 });
      // Edit fills the form with the provider (its id fixed, its key kept unless retyped).
      await page.click('#provider-list [data-provider="local"] button.edit');
      const title = await page.textContent("#provider-form-title");
      expect(title === "Change local", `the form says what it changes: ${title}`);
      expect(await page.getAttribute("#provider-id", "readonly") !== null, "the id cannot change");
      expect((await page.inputValue("#provider-url")) === base, "the address is filled in");
      const kept = await page.textContent("#provider-key-state");
      expect(kept.includes(`••••${key.slice(-4)}`) && kept.includes("kept"), `the key is kept: ${kept}`);
      await page.locator("#provider-form").scrollIntoViewIfNeeded();
      await themes(page, "edit");
      await page.click("#provider-cancel");
      expect((await page.textContent("#provider-form-title")) === "Add a provider", "Cancel leaves the edit");
      await page.click("#settings .row.end button");
      // The picker offers the provider's models in their own group, without a reload.
      const group = await page.locator('#model optgroup[label="local"] option').evaluateAll((options) => options.map((option) => option.value));
      expect(group.includes("local/qwen-local") && group.includes("local/llama-local"), `the picker's local group: ${group}`);
      await page.selectOption("#model", "local/qwen-local");
      await page.fill("#prompt", "hello");
      await page.keyboard.press("Enter");
      await page.waitForSelector(".turn-end", { state: "attached" });
      const answer = await page.textContent(".message.assistant");
      expect(answer.includes("hello from the local model"), `the local model answered: ${answer}`);
      expect((await page.inputValue("#model")) === "local/qwen-local", "the picker shows the session's model");
      // The save's toast (8 s) would hide the composer in the shots.
      await page.evaluate(() => document.querySelectorAll(".toast").forEach((toast) => toast.remove()));
      await themes(page, "answered");
      await page.setViewportSize({ width: 390, height: 844 });
      await themes(page, "answered-390");
      // Removed in the settings: gone from the list and from the picker.
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.click("#open-settings");
      await page.click("#tab-models");
      page.once("dialog", (dialog) => dialog.accept());
      await page.click('#provider-list [data-provider="local"] button.remove');
      await page.waitForSelector('#provider-list [data-provider="local"]', { state: "detached" });
      await page.click("#settings .row.end button");
      // The open session still names its model (shown as it is, alone), but the provider's
      // group is gone.
      const groups = await page.locator('#model optgroup[label="local"]').count();
      const left = await page.locator('#model option[value^="local/"]').evaluateAll((options) => options.map((option) => option.value));
      expect(groups === 0 && left.length === 1 && left[0] === "local/qwen-local", `the picker no longer offers the provider's models: ${groups} group(s), ${left}`);
    },
  };
}
