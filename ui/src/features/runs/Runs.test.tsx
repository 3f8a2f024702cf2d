import { afterEach, beforeEach, expect, it } from "vitest";
import { cleanup, render, screen } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";
import type { RunSummary } from "../../lib/ipc/bindings";

// Each run is given its own time: the list sorts by the last update, and two
// `Date.now()` calls a millisecond apart would swap the rows.
const run = (id: string, name: string, machine: string | null, at: number): RunSummary => ({
  id, name, agent: "script", state: "running", terminal: false, waiting: false,
  workspace: "/srv/work/api", machine, steps: 3, createdAt: at, updatedAt: at, lastError: null,
});

beforeEach(() => resetUi({ view: "runs", runId: null, approvalId: null }));
afterEach(cleanup);

it("names the machine a run was started on, and nothing for a run from before machines were recorded", async () => {
  const fake = fakeBackend({
    runs: [
      run("0193f000-0000-7000-8000-000000000001", "on the build box", "build-7", Date.now()),
      run("0193f000-0000-7000-8000-000000000002", "an old run", null, Date.now() - 60_000),
    ],
  });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  const rows = await screen.findAllByTestId("run-row");
  expect(rows).toHaveLength(2);
  const machines = screen.getAllByTestId("run-machine");
  expect(machines).toHaveLength(1);
  expect(machines[0].textContent).toBe("on build-7");
  expect(rows[0].contains(machines[0])).toBe(true);
});
