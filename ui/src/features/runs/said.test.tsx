import { afterEach, expect, it } from "vitest";
import { cleanup, render, screen } from "@testing-library/react";
import type { AuditEventView, StepView } from "../../lib/ipc/bindings";
import { Timeline } from "./RunDetail";
import { agentMessages, interleave } from "./said";

afterEach(cleanup);

const step = (seq: number, startedAt: number): StepView => ({
  seq,
  kind: "tool",
  tool: "fs.write",
  action: { kind: "write", path: `f${seq}.md`, bytes: 2 },
  actionHash: "h",
  why: null,
  status: "done",
  risk: "medium",
  reasons: [],
  preview: null,
  result: "ok",
  summary: `write f${seq}.md`,
  modelTurn: null,
  startedAt,
  endedAt: startedAt + 5,
}) as unknown as StepView;

const event = (seq: number, at: number, kind: string, payload: unknown): AuditEventView => ({
  seq,
  at,
  actor: "agent",
  kind,
  runId: "r1",
  runName: "notes",
  stepSeq: null,
  approvalId: null,
  sentence: "",
  payload: payload as AuditEventView["payload"],
  prevHash: "",
  hash: "",
});

const audit = [
  event(1, 100, "agent.identified", { name: "qwen-code" }),
  event(4, 300, "agent.reported", { what: "message", detail: { text: "Now the **second** file." } }),
  event(2, 100, "agent.reported", { what: "message", detail: { text: "I will write the notes." } }),
  event(3, 150, "agent.reported", { what: "tool_call", detail: { kind: "edit", status: "pending" } }),
  event(5, 900, "agent.reported", { what: "message", detail: { text: "Both files are written." } }),
  event(6, 950, "agent.reported", { what: "message", detail: { text: 42 } }),
];

it("keeps only the agent's messages, oldest first", () => {
  expect(agentMessages(audit).map((s) => s.text)).toEqual([
    "I will write the notes.",
    "Now the **second** file.",
    "Both files are written.",
  ]);
});

it("puts each message before the step it led to, and the closing words last", () => {
  const items = interleave([step(1, 100), step(2, 400)], agentMessages(audit));
  expect(items.map((i) => ("said" in i ? `said:${i.said.seq}` : `step:${i.step.seq}`))).toEqual([
    "said:2",
    "step:1",
    "said:4",
    "step:2",
    "said:5",
  ]);
});

it("renders the agent's words as Markdown on the timeline, named", () => {
  const asked = { ...step(1, 100), why: "I will write the notes." };
  const other = { ...step(2, 400), why: "a reason of its own" };
  render(<Timeline steps={[asked, other]} approvals={[]} said={agentMessages(audit)} speaker="qwen-code" />);
  const said = screen.getAllByTestId("agent-said");
  expect(said).toHaveLength(3);
  expect(said[0].textContent).toContain("qwen-code said");
  expect(said[1].querySelector("strong")?.textContent).toBe("second");
  const items = Array.from(screen.getByTestId("timeline").children).map((li) => li.getAttribute("data-testid"));
  expect(items).toEqual(["agent-said", "step", "agent-said", "step", "agent-said"]);
  // The words the request carried as its reason are shown once, above it; another reason stays.
  const whys = Array.from(document.querySelectorAll(".why")).map((w) => w.textContent);
  expect(whys).toEqual(["“a reason of its own”"]);
});
