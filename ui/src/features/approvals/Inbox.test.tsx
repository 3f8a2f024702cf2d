import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { QueryClient } from "@tanstack/react-query";
import { App } from "../../App";
import { fakeBackend, type FakeData } from "../../lib/ipc/fake";
import { resetUi } from "../../lib/store";
import type { ApprovalView } from "../../lib/ipc/bindings";
import { batchable, nextIndex } from "./triage";
import { movedWhy } from "./Inbox";

const HASH = "a".repeat(64);

function approval(over: Partial<ApprovalView> = {}): ApprovalView {
  const base: ApprovalView = {
    id: "0193aaaa-0000-7000-8000-000000000001",
    runId: "0193bbbb-0000-7000-8000-000000000001",
    agent: "llm",
    stepSeq: 4,
    tool: "fs.edit",
    action: { tool: "fs.edit", args: { path: "config/logrotate.conf", old: "weekly", new: "daily" } },
    actionHash: HASH,
    subject: "config/logrotate.conf",
    risk: "medium",
    reasons: ["it changes a file in the workspace"],
    segments: [],
    preview: "--- a/config/logrotate.conf\n+++ b/config/logrotate.conf\n@@ -1,2 +1,2 @@\n /var/log/app/*.log {\n-    weekly\n+    daily\n",
    previewSha256: "b".repeat(64),
    runs: null,
    preImages: [],
    context: {
      goal: "Fix log rotation",
      stepsDone: 3,
      recent: ["#3 fs.read config/logrotate.conf"],
      why: "rotate daily so the disk stops filling",
      read: ["logs/app.log"],
      memory: [],
      pending: [],
      constraints: [],
    },
    facts: [],
    policy: "{}",
    status: "pending",
    createdAt: Date.now() - 5000,
    expiresAt: Date.now() + 3_600_000,
    onTimeout: "pause",
    pausedAt: null,
    siblingsRejected: 0,
    staged: null,
    stagedFiles: [],
    decidedAt: null,
    decidedBy: null,
    note: null,
    scope: null,
    edited: null,
    supersededBy: null,
    staleReason: null,
  };
  return { ...base, ...over } as ApprovalView;
}

function mount(approvals: ApprovalView[], more: Omit<FakeData, "approvals"> = {}) {
  const fake = fakeBackend({ approvals, ...more });
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(<App backend={fake.backend} client={client} />);
  return fake;
}

beforeEach(() => resetUi());
afterEach(cleanup);

describe("approvals inbox", () => {
  it("says a review was replaced and shows the new one when the core answers superseded", async () => {
    const replacement = approval({ id: "0193aaaa-0000-7000-8000-000000000009", preview: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n" });
    mount([approval()], {
      decisionError: { code: "superseded", message: "approval 0193aaaa was superseded" },
      replacement,
    });
    await screen.findByTestId("approval-card");
    fireEvent.keyDown(window, { key: "a" });
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("replaced by one with the current diff");
    await waitFor(() => expect(screen.getByTestId("approval-card").getAttribute("data-approval")).toBe(replacement.id));
  });

  it("says the review expired, not that something broke, when the core answers expired", async () => {
    mount([approval()], { decisionError: { code: "expired", message: "approval expired" } });
    await screen.findByTestId("approval-card");
    fireEvent.keyDown(window, { key: "a" });
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("the action did not run");
  });

  it("says what the card becomes if nobody decides, and that a paused one still waits", async () => {
    mount([
      approval({ onTimeout: "deny" }),
      approval({ id: "0193aaaa-0000-7000-8000-000000000002", pausedAt: Date.now() - 60_000 }),
    ]);
    await screen.findByTestId("approval-card");
    expect(screen.getByTestId("card-deadline").textContent).toContain("expires and the action is refused");
    fireEvent.keyDown(window, { key: "j" });
    await waitFor(() => expect(screen.getByTestId("card-deadline").textContent).toContain("the run waits for you"));
  });

  it("shows the risk, the reasons, the context and the diff", async () => {
    mount([approval()]);
    const card = await screen.findByTestId("approval-card");
    expect(card.textContent).toContain("it changes a file in the workspace");
    expect(card.textContent).toContain("rotate daily so the disk stops filling");
    expect(screen.getByTestId("goal").textContent).toBe("Fix log rotation");
    const del = card.querySelector('.diff-line[data-kind="del"]');
    const add = card.querySelector('.diff-line[data-kind="add"]');
    expect(del?.textContent).toContain("weekly");
    expect(add?.textContent).toContain("daily");
    expect(screen.getByTestId("pending-count").textContent).toBe("1");
  });

  it("names each card's agent, so cards from several vendors can sit side by side", async () => {
    mount([
      approval({ agent: "OpenCode 1.18.33", tool: "agent.permission" }),
      approval({ id: "0193aaaa-0000-7000-8000-000000000002", agent: "qwen-code 0.24.4" }),
    ]);
    const card = await screen.findByTestId("approval-card");
    expect(screen.getByTestId("card-agent").textContent).toBe("OpenCode 1.18.33");
    expect(card.closest(".page, body")?.textContent).toContain("qwen-code 0.24.4");
  });

  it("approves with `a`, bound to the hash the card showed", async () => {
    const fake = mount([approval()]);
    await screen.findByTestId("approval-card");
    fireEvent.keyDown(window, { key: "a" });
    await waitFor(() => expect(fake.calls.some((c) => c.name === "approve")).toBe(true));
    const call = fake.calls.find((c) => c.name === "approve");
    expect(call?.args[0]).toBe(approval().id);
    expect(call?.args[1]).toMatchObject({ scope: "once", expectHash: HASH, editedArgs: null });
  });

  it("rejects with `r` only once a reason is given", async () => {
    const fake = mount([approval()]);
    await screen.findByTestId("approval-card");
    fireEvent.keyDown(window, { key: "r" });
    const confirm = await screen.findByTestId("confirm-reject");
    expect((confirm as HTMLButtonElement).disabled).toBe(true);
    fireEvent.change(document.querySelector('textarea[name="reject-reason"]') as Element, { target: { value: "keep weekly, add maxsize" } });
    fireEvent.click(confirm);
    await waitFor(() => expect(fake.calls.find((c) => c.name === "reject")?.args).toEqual([approval().id, "keep weekly, add maxsize", false]));
    expect(screen.queryByTestId("reject-siblings")).toBeNull();
  });

  it("offers to reject the calls queued after a card with it", async () => {
    const queued = approval({ context: { ...approval().context, pending: ["fs_write", "shell_exec"] } });
    const fake = mount([queued]);
    await screen.findByTestId("approval-card");
    fireEvent.keyDown(window, { key: "r" });
    const offer = await screen.findByTestId("reject-siblings");
    expect(offer.textContent).toContain("Also reject the 2 calls queued after it in this turn (fs_write, shell_exec)");
    fireEvent.click(offer.querySelector("input") as Element);
    fireEvent.change(document.querySelector('textarea[name="reject-reason"]') as Element, { target: { value: "not this turn" } });
    fireEvent.click(await screen.findByTestId("confirm-reject"));
    await waitFor(() => expect(fake.calls.find((c) => c.name === "reject")?.args).toEqual([queued.id, "not this turn", true]));
  });

  it("edit-then-approve sends the edited arguments", async () => {
    const fake = mount([approval()]);
    await screen.findByTestId("approval-card");
    fireEvent.keyDown(window, { key: "e" });
    await screen.findByTestId("edit-box");
    fireEvent.change(document.querySelector('textarea[name="edit-new"]') as Element, { target: { value: "daily\n    maxsize 100M" } });
    fireEvent.click(screen.getByTestId("approve-edited"));
    await waitFor(() => expect(fake.calls.some((c) => c.name === "approve")).toBe(true));
    const args = fake.calls.find((c) => c.name === "approve")?.args[1] as { editedArgs: Record<string, string> };
    expect(args.editedArgs).toEqual({ path: "config/logrotate.conf", old: "weekly", new: "daily\n    maxsize 100M" });
  });

  it("a command's card says how it runs, and running it with the network is its own choice, once", async () => {
    const fake = mount([approval({
      tool: "shell.exec",
      action: { tool: "shell.exec", args: { argv: ["curl", "https://example.com"], timeout_s: 120 } },
      subject: "curl https://example.com",
      runs: "confined (Landlock ABI 7, seccomp): no network, writes inside the workspace",
    })]);
    expect((await screen.findByTestId("card-runs")).textContent).toContain("no network");
    expect(screen.queryByTestId("approve-network")).not.toBeNull();
    fireEvent.click(screen.getByTestId("approve-network"));
    await waitFor(() => expect(fake.calls.some((c) => c.name === "approve")).toBe(true));
    const args = fake.calls.find((c) => c.name === "approve")?.args[1] as { scope: string; editedArgs: Record<string, unknown> };
    expect(args.scope).toBe("once");
    expect(args.editedArgs).toEqual({ argv: ["curl", "https://example.com"], timeout_s: 120, sandbox: "network" });
  });

  it("a staged command's card shows what it did, and that approving applies that without running it again", async () => {
    mount([approval({
      tool: "shell.exec",
      action: { tool: "shell.exec", args: { command: "make", timeout_s: 120 } },
      subject: "make",
      runs: "confined (Landlock ABI 7, seccomp): no network, writes inside the workspace",
      staged: "staged (overlay in a user namespace): changes 1 file, creates 1, deletes none; no network used",
      preview:
        "staged (overlay in a user namespace): changes 1 file, creates 1, deletes none; no network used\n" +
        "approving applies exactly these changes; the command does not run again\n" +
        "--- a/VERSION\n+++ b/VERSION\n@@ -1,1 +1,1 @@\n-v1\n+v2\n" +
        "run.sh: mode 644 → 755\n" +
        "--- the staged run\nexit code 0 after 0.4 s: built\n",
    })]);
    const line = await screen.findByTestId("staged-line");
    expect(line.textContent).toContain("changes 1 file, creates 1");
    expect(line.textContent).toContain("the command does not run again");
    expect(screen.getByTestId("command").textContent).toContain("make");
    expect(document.querySelector(".staged-notes")?.textContent).toBe("run.sh: mode 644 → 755");
    const added = document.querySelectorAll(".diff-line.add");
    expect(Array.from(added).some((l) => l.textContent?.includes("v2"))).toBe(true);
    expect(screen.getByTestId("staged-output").textContent).toContain("exit code 0");
    expect(screen.queryByTestId("card-runs")).toBeNull();
    expect(document.querySelector(".staged-chip")?.textContent).toBe("staged");
    // It did all it does confined and offline: running it again out of the sandbox is not offered.
    expect(screen.getByTestId("approve")).not.toBeNull();
    expect(screen.queryByTestId("escape")).toBeNull();
    expect(screen.queryByTestId("approve-network")).toBeNull();
    expect(screen.queryByTestId("approve-unconfined")).toBeNull();
  });

  it("a staged card's files can be left out: unticked ones are sent as leaveOut, and only those", async () => {
    const fake = mount([approval({
      tool: "shell.exec",
      action: { tool: "shell.exec", args: { command: "make", timeout_s: 120 } },
      subject: "make",
      staged: "staged (overlay as root): changes 1 file, creates 1, deletes 1; no network used",
      stagedFiles: ["VERSION", "gen/version.rs", "old.txt"],
      preview:
        "staged (overlay as root): changes 1 file, creates 1, deletes 1; no network used\n" +
        "approving applies exactly these changes; the command does not run again\n" +
        "--- a/VERSION\n+++ b/VERSION\n@@ -1,1 +1,1 @@\n-v1\n+v2\n" +
        "--- the staged run\nexit code 0 after 0.4 s: built\n",
    })]);
    const boxes = await screen.findAllByTestId("staged-file");
    expect(boxes.map((b) => b.getAttribute("data-path"))).toEqual(["VERSION", "gen/version.rs", "old.txt"]);
    expect(boxes.every((b) => (b as HTMLInputElement).checked)).toBe(true);
    fireEvent.click(boxes[2]);
    fireEvent.click(boxes[1]);
    fireEvent.click(boxes[1]);
    expect(screen.getByTestId("staged-files").textContent).toContain("What lands (2 of 3)");
    // The key pressed with the tick box still focused approves.
    fireEvent.keyDown(boxes[1], { key: "a" });
    await waitFor(() => expect(fake.calls.some((c) => c.name === "approve")).toBe(true));
    const args = fake.calls.find((c) => c.name === "approve")?.args[1] as { leaveOut: string[] | null };
    expect(args.leaveOut).toEqual(["old.txt"]);
  });

  it("a command staging could not capture shows what staging saw above it", async () => {
    mount([approval({
      tool: "shell.exec",
      action: { tool: "shell.exec", args: { command: "make", timeout_s: 120 } },
      subject: "make",
      runs: "confined (Landlock ABI 7, seccomp): no network, writes inside the workspace",
      preview:
        "staged first (overlay (root)): changes 1 file, creates 1, deletes 1; tried to reach crates.io, which staging does not give\n" +
        "  make tried to reach crates.io (it looked the name up; staging gives no network)\n" +
        "staging could not capture all it does, so approving runs the command itself, confined\n" +
        "$ make\n\nruns directly as this argv\n",
    })]);
    const note = await screen.findByTestId("staging-note");
    expect(note.textContent).toContain("tried to reach crates.io, which staging does not give");
    expect(note.querySelectorAll("li").length).toBe(2);
    expect(note.textContent).toContain("approving runs the command itself, confined");
    expect(note.textContent).not.toContain("$ make");
  });

  it("a file change offers no network choice", async () => {
    mount([approval()]);
    await screen.findByTestId("approval-card");
    expect(screen.queryByTestId("approve-network")).toBeNull();
  });

  it("moves with j/k and keeps keys away from text fields", async () => {
    const second = approval({ id: "0193aaaa-0000-7000-8000-000000000002", context: { ...approval().context, why: "second one" } });
    const fake = mount([approval(), second]);
    await screen.findByTestId("approval-card");
    fireEvent.keyDown(window, { key: "j" });
    await waitFor(() => expect(screen.getByTestId("approval-card").getAttribute("data-approval")).toBe(second.id));
    fireEvent.keyDown(window, { key: "k" });
    await waitFor(() => expect(screen.getByTestId("approval-card").getAttribute("data-approval")).toBe(approval().id));
    fireEvent.keyDown(window, { key: "r" });
    const box = (await screen.findByTestId("confirm-reject")) && document.querySelector('textarea[name="reject-reason"]');
    fireEvent.keyDown(box as Element, { key: "a" });
    expect(fake.calls.some((c) => c.name === "approve")).toBe(false);
  });

  it("renders agent text as text, never as HTML", async () => {
    const evil = approval({ context: { ...approval().context, why: '<img src=x onerror="alert(1)">pwned' } });
    mount([evil]);
    const card = await screen.findByTestId("approval-card");
    expect(card.querySelector("img")).toBeNull();
    expect(card.textContent).toContain('<img src=x onerror="alert(1)">pwned');
  });

  it("refetches when Rust says something changed", async () => {
    const fake = mount([]);
    await screen.findByTestId("inbox-empty");
    fake.state.approvals.push(approval());
    act(() => fake.emitChanged());
    expect(await screen.findByTestId("approval-card")).toBeTruthy();
  });
});

describe("triage rules", () => {
  it("approves the checked cards together, each bound to the hash it showed", async () => {
    const second = approval({ id: "0193aaaa-0000-7000-8000-000000000002", actionHash: "c".repeat(64), subject: "docs/note.md", tool: "fs.write" });
    const fake = mount([approval(), second]);
    const boxes = await screen.findAllByLabelText("select for batch approval");
    boxes.forEach((b) => fireEvent.click(b));
    fireEvent.click(screen.getByTestId("batch-approve"));
    await waitFor(() => expect(fake.calls.some((c) => c.name === "approveBatch")).toBe(true));
    const call = fake.calls.find((c) => c.name === "approveBatch");
    expect(call?.args[0]).toEqual({
      cards: [
        { id: approval().id, actionHash: HASH },
        { id: second.id, actionHash: "c".repeat(64) },
      ],
      note: null,
    });
    expect(fake.calls.some((c) => c.name === "approve")).toBe(false);
  });

  it("a batch where one card moved approves none and shows which one", async () => {
    const second = approval({ id: "0193aaaa-0000-7000-8000-000000000002", subject: "docs/note.md", tool: "fs.write" });
    mount([approval(), second], {
      batchError: {
        code: "conflict",
        message: `none of the 2 cards was approved: 1 moved since you saw it: ${second.id}: its files changed on disk since it was shown; review approval 0193aaaa-0000-7000-8000-000000000003 instead`,
      },
    });
    const boxes = await screen.findAllByLabelText("select for batch approval");
    boxes.forEach((b) => fireEvent.click(b));
    fireEvent.click(screen.getByTestId("batch-approve"));
    const panel = await screen.findByTestId("batch-conflict");
    expect(panel.textContent).toContain("None of the 2 checked cards was approved");
    expect(panel.textContent).toContain("docs/note.md");
    expect(panel.textContent).toContain("its files changed on disk since it was shown");
    expect(panel.textContent).not.toContain("config/logrotate.conf");
    // Both still wait; the one that moved is marked, and no longer checked.
    const items = screen.getAllByTestId("queue-item");
    expect(items).toHaveLength(2);
    expect(items[1].className).toContain("moved");
    expect(items[0].className).not.toContain("moved");
    const after = screen.getAllByLabelText("select for batch approval") as HTMLInputElement[];
    expect(after.map((b) => b.checked)).toEqual([true, false]);
  });

  it("reads why a card moved from the core's answer", () => {
    const said = "none: 2 moved: A: superseded; review A2 instead; B: already rejected; never changed";
    expect(movedWhy(said, "A", ["A", "B", "C"])).toBe("superseded; review A2 instead");
    expect(movedWhy(said, "B", ["A", "B", "C"])).toBe("already rejected; never changed");
    expect(movedWhy("other", "C", ["C"])).toBe("it was decided elsewhere or changed");
  });

  it("batches only low and medium risk", () => {
    expect(batchable([{ risk: "low" }, { risk: "medium" }])).toBe(true);
    expect(batchable([{ risk: "low" }, { risk: "high" }])).toBe(false);
    expect(batchable([])).toBe(false);
  });
  it("clamps j/k at the ends", () => {
    expect(nextIndex(0, 3, -1)).toBe(0);
    expect(nextIndex(2, 3, 1)).toBe(2);
    expect(nextIndex(1, 3, 1)).toBe(2);
  });
});

describe("in a browser paired with reins serve", () => {
  it("offers the inbox's views only, and opens a card from the list", async () => {
    mount([approval(), approval({ id: "0193aaaa-0000-7000-8000-000000000002", subject: "b.conf" })], { face: "web" });
    await screen.findByTestId("approval-card");
    const views = [...document.querySelectorAll("nav .nav")].map((n) => n.getAttribute("data-view"));
    expect(views).toEqual(["approvals", "runs", "memory", "audit", "rules"]);
    // Nothing opened yet: at a phone's width the list shows; opening one shows its card instead.
    expect(document.querySelector(".inbox")?.classList.contains("has-open")).toBe(false);
    fireEvent.click(screen.getAllByTestId("queue-item")[1]);
    await waitFor(() => expect(document.querySelector(".inbox")?.classList.contains("has-open")).toBe(true));
    expect(screen.getByTestId("approval-card").getAttribute("data-approval")).toBe("0193aaaa-0000-7000-8000-000000000002");
    fireEvent.click(screen.getByTestId("back-to-list"));
    await waitFor(() => expect(document.querySelector(".inbox")?.classList.contains("has-open")).toBe(false));
  });

  it("does not offer to start runs on the machine", async () => {
    mount([], { face: "web" });
    await screen.findByTestId("inbox-empty");
    expect(screen.queryByTestId("start-demo")).toBeNull();
  });
});
