import { afterEach, describe, expect, it } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { BackendProvider } from "../../lib/ipc/context";
import { fakeBackend } from "../../lib/ipc/fake";
import type { AuditEventView, RunDetail } from "../../lib/ipc/bindings";
import { ChangedUnasked } from "./Unasked";

afterEach(cleanup);

const RUN = "0193f000-0000-7000-8000-0000000000aa";

const event = (seq: number, kind: string, payload: unknown): AuditEventView => ({
  seq, at: Date.now(), actor: "harness", kind, runId: RUN, runName: "notes", stepSeq: null, approvalId: null,
  sentence: kind, payload: payload as AuditEventView["payload"], prevHash: "", hash: "",
});

function detail(state: string, audit: AuditEventView[]): RunDetail {
  return { run: { id: RUN, state }, audit } as unknown as RunDetail;
}

const caught = event(7, "workspace.changed_unasked", {
  changes: [
    { path: "NOTES.md", kind: "modified", undoable: true },
    { path: "big.bin", kind: "modified", undoable: false },
  ],
  undo: 5,
});

function mount(d: RunDetail) {
  const fake = fakeBackend({
    rollback: [{ path: "NOTES.md", from: null, to: null, diff: "--- a/NOTES.md\n+++ b/NOTES.md\n@@ -1 +1 @@\n-written unasked\n+my notes\n" }],
  });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <BackendProvider backend={fake.backend}>
      <QueryClientProvider client={client}>
        <ChangedUnasked d={d} />
      </QueryClientProvider>
    </BackendProvider>,
  );
  return fake;
}

describe("a run stopped on changes nobody approved", () => {
  it("shows what the agent changed as a diff, and undoes it by rolling back to the checkpoint before it", async () => {
    const fake = mount(detail("suspended", [caught]));
    const card = await screen.findByTestId("changed-unasked");
    expect(card.textContent).toContain("changed 2 files without asking");
    expect(card.textContent).toContain("big.bin (changed) — too large to have been kept: cannot be undone");
    // The diff reads the way the agent changed the file: its line added, the person's removed.
    await waitFor(() => expect(card.querySelectorAll("[data-kind='add']").length).toBe(1));
    expect(card.querySelector("[data-kind='add']")?.textContent).toContain("written unasked");
    expect(card.querySelector("[data-kind='del']")?.textContent).toContain("my notes");
    expect(fake.calls.find((c) => c.name === "rollbackRun")?.args).toEqual([RUN, 5, true]);
    fireEvent.click(screen.getByText("Undo these changes"));
    await waitFor(() => expect(fake.calls.filter((c) => c.name === "rollbackRun").map((c) => c.args[2])).toContain(false));
    expect(fake.calls.find((c) => c.name === "rollbackRun" && c.args[2] === false)?.args).toEqual([RUN, 5, false]);
  });

  it("keeps them and resumes, and says nothing once the run went on", async () => {
    const fake = mount(detail("suspended", [caught]));
    fireEvent.click(await screen.findByText("Keep them and resume"));
    await waitFor(() => expect(fake.calls.map((c) => c.name)).toContain("resumeRun"));
    cleanup();
    mount(detail("running", [caught, event(9, "run.resumed", {})]));
    expect(screen.queryByTestId("changed-unasked")).toBeNull();
  });
});
