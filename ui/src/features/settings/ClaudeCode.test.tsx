import { afterEach, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";

afterEach(cleanup);

it("finds Claude Code and installs and uninstalls Reins' hooks for every project or one", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend({ claude: "/usr/local/bin/claude" });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("claude-found").textContent).toContain("/usr/local/bin/claude"));
  await waitFor(() => expect(screen.getByTestId("claude-hooks-state").textContent).toContain("not installed"));
  expect(screen.getByTestId("claude-hooks-state").textContent).toContain("/home/u/.claude/settings.json");
  expect((screen.getByTestId("claude-uninstall") as HTMLButtonElement).disabled).toBe(true);
  fireEvent.click(screen.getByTestId("claude-install"));
  await waitFor(() => expect(screen.getByTestId("claude-hooks-state").textContent).toMatch(/^installed/));
  expect((screen.getByTestId("claude-install") as HTMLButtonElement).disabled).toBe(true);

  // One project: its own file, not installed until asked.
  fireEvent.change(screen.getByLabelText("project folder"), { target: { value: "/work/app" } });
  fireEvent.click(screen.getAllByRole("radio")[1]);
  await waitFor(() => expect(screen.getByTestId("claude-hooks-state").textContent).toContain("/work/app/.claude/settings.local.json"));
  expect(screen.getByTestId("claude-hooks-state").textContent).toContain("not installed");
  fireEvent.click(screen.getByTestId("claude-install"));
  await waitFor(() => expect(screen.getByTestId("claude-hooks-state").textContent).toMatch(/^installed/));
  fireEvent.click(screen.getByTestId("claude-uninstall"));
  await waitFor(() => expect(screen.getByTestId("claude-hooks-state").textContent).toContain("not installed"));
  expect(fake.calls.filter((c) => c.name === "setClaudeHooks").map((c) => c.args)).toEqual([
    [null, true],
    ["/work/app", true],
    ["/work/app", false],
  ]);
});

it("says when claude is not on PATH", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend({ claude: null });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("claude-found").textContent).toContain("not on PATH"));
});

it("says loudly when a project's own settings switch Claude Code's hooks off", async () => {
  resetUi({ view: "settings", runId: null, approvalId: null });
  const fake = fakeBackend({ claude: "/usr/local/bin/claude", hooksOff: ["/work/cloned"] });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("claude-hooks-state").textContent).toContain("not installed"));
  expect(screen.queryByTestId("claude-hooks-off")).toBeNull();
  fireEvent.change(screen.getByLabelText("project folder"), { target: { value: "/work/cloned" } });
  fireEvent.click(screen.getAllByRole("radio")[1]);
  await waitFor(() => expect(screen.getByTestId("claude-hooks-off").textContent).toContain("sets disableAllHooks"));
  expect(screen.getByTestId("claude-hooks-off").textContent).toContain("--managed");
});
