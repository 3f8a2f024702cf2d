import { afterEach, expect, it, onTestFinished, vi } from "vitest";
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";
import type { AuditEventView, Value } from "../../lib/ipc/bindings";
import { chainLabel } from "./verify";

afterEach(cleanup);

it("verifies the chain once, not again on every change (verifying is itself a change)", async () => {
  resetUi({ view: "audit", runId: null, approvalId: null });
  const fake = fakeBackend();
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getByTestId("chain-status").textContent).toContain("intact"));
  for (let i = 0; i < 5; i++) act(() => fake.emitChanged());
  await waitFor(() => expect(fake.calls.filter((c) => c.name === "auditPage").length).toBeGreaterThan(1));
  expect(fake.calls.filter((c) => c.name === "auditVerify")).toHaveLength(1);
});

const event = (seq: number, kind: string, sentence: string, payload: { [key: string]: Value }): AuditEventView => ({
  seq,
  at: 1764748800000 + seq * 1000,
  actor: "user",
  kind,
  runId: "01a23a42-465f-767b-9dc5-2a207ba34d57",
  runName: "Fix log rotation",
  stepSeq: 4,
  approvalId: null,
  sentence,
  payload,
  prevHash: "a".repeat(64),
  hash: "b".repeat(64),
});

it("shows each event as its sentence with the run by name, and opens the payload on click", async () => {
  // jsdom lays nothing out: give the table a height, or the virtual list renders no rows.
  const height = vi.spyOn(HTMLElement.prototype, "clientHeight", "get").mockReturnValue(600);
  const width = vi.spyOn(HTMLElement.prototype, "clientWidth", "get").mockReturnValue(800);
  onTestFinished(() => {
    height.mockRestore();
    width.mockRestore();
  });
  resetUi({ view: "audit", runId: null, approvalId: null });
  const fake = fakeBackend({
    audit: [
      event(2, "approval.approved", "You approved fs.edit on config/logrotate.conf (once)", { approval: "a1", scope: "once" }),
      event(1, "policy.decided", "The policy asked for review of step 4 (fs.edit, medium risk): edits config/logrotate.conf", { step: 4 }),
    ],
    verification: {
      intact: true,
      events: 1,
      head: { seq: 1, hash: "b".repeat(64) },
      anchor: { path: "", status: "agrees", head: null },
      damage: null,
      anchorCreatedAt: [],
      keys: { status: "checked", keyId: "0123456789abcdef", vouched: 1, unkeyed: 0, keyedSince: 1, others: [], unvouchedFrom: null, unvouched: 0, detail: null },
      elapsedMs: 1,
    },
  });
  render(<App backend={fake.backend} client={new QueryClient()} />);
  await waitFor(() => expect(screen.getAllByTestId("audit-sentence")).toHaveLength(2));
  const said = screen.getAllByTestId("audit-sentence").map((s) => s.textContent);
  expect(said[0]).toBe("You approved fs.edit on config/logrotate.conf (once)");
  expect(screen.getAllByText("Fix log rotation").length).toBeGreaterThan(0);
  // No raw payload until asked for.
  expect(screen.queryByTestId("audit-payload")).toBeNull();
  // The badge counts what it verified and says the newer event is not verified yet.
  await waitFor(() => expect(screen.getByTestId("chain-status").textContent).toBe("chain intact · 1 event · 1 vouched for by this machine's key · 1 newer, not verified yet"));
  fireEvent.click(screen.getAllByTestId("audit-row")[0]);
  const payload = screen.getByTestId("audit-payload").textContent ?? "";
  expect(JSON.parse(payload)).toEqual({ approval: "a1", scope: "once" });
  fireEvent.click(screen.getAllByTestId("audit-row")[0]);
  expect(screen.queryByTestId("audit-payload")).toBeNull();
});

it("does not count the record of a verification as an event it missed", () => {
  const v = { intact: true, events: 2, head: { seq: 2, hash: "" }, anchor: { path: "", status: "agrees", head: null }, damage: null, anchorCreatedAt: [], keys: { status: "unkeyed", keyId: null, vouched: 0, unkeyed: 0, keyedSince: null, others: [], unvouchedFrom: null, unvouched: 0, detail: null }, elapsedMs: 1 };
  expect(chainLabel(v, [{ seq: 3, kind: "audit.verified" }, { seq: 2, kind: "run.created" }])).toBe("chain intact · 2 events · not keyed (no OS keyring)");
  expect(chainLabel(v, [{ seq: 4, kind: "run.created" }, { seq: 3, kind: "audit.verified" }])).toBe("chain intact · 2 events · not keyed (no OS keyring) · 1 newer, not verified yet");
  expect(chainLabel({ ...v, events: 1, head: { seq: 1, hash: "" } }, [])).toBe("chain intact · 1 event · not keyed (no OS keyring)");
  const team = { ...v, keys: { ...v.keys, status: "checked", vouched: 2, keyedSince: 1, others: [{ id: "fedcba9876543210", events: 3 }] } };
  expect(chainLabel(team, [])).toBe("chain intact · 2 events · 2 vouched for by this machine's key · 3 events by other machines' keys");
});
