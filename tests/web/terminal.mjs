// The page beside the terminal UI on one session (`tui::page` drives `dsh` in tmux while this
// runs): the page opens the session DSH_SHARED_SESSION names, says `page: ready` on stdout,
// sees the terminal's first turn ask and answers it itself, then sees the second turn's ask
// answered from the terminal's modal, and both answers arrive.

export function terminalScenarios({ expect, shoot, openSession }) {
  const answered = (page, text) =>
    page.waitForFunction(
      (wanted) => [...document.querySelectorAll(".message.assistant")].some((node) => node.textContent.includes(wanted)),
      text,
      { timeout: 60000 },
    );
  return {
    async terminal(page) {
      await openSession(page, process.env.DSH_SHARED_SESSION);
      console.log("page: ready");
      // Turn 1, typed in the terminal: the page answers its ask.
      await page.waitForSelector(".approval.pending button.allow", { timeout: 60000 });
      const ask = await page.textContent(".approval.pending .approval-ask");
      expect(ask.includes("Run bash?"), `the page's card asks "${ask}"`);
      const typed = await page.textContent(".message.user .bubble");
      expect(typed === "first from the terminal", `the page shows the terminal's prompt as "${typed}"`);
      await page.click(".approval.pending button.allow");
      await answered(page, "First answer.");
      console.log("page: first answered");
      // Turn 2: the terminal answers; the page's card is decided without a click here.
      await page.waitForFunction(() => document.querySelectorAll(".approval.decided").length === 2, null, {
        timeout: 60000,
      });
      await answered(page, "Second answer.");
      const outcomes = await page.locator(".approval.decided .approval-outcome").allTextContents();
      expect(
        outcomes.length === 2 && outcomes.every((outcome) => outcome === "Allowed once"),
        `the cards say ${JSON.stringify(outcomes)}`,
      );
      expect((await page.locator(".approval.pending").count()) === 0, "no card is left pending");
      await shoot(page, "shared");
    },
  };
}
