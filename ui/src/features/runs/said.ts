import type { AuditEventView, StepView } from "../../lib/ipc/bindings";

/** Something an external agent wrote between its tool calls, as the run's audit log kept it. */
export type Said = { seq: number; at: number; text: string };

/** The agent's messages (`agent.reported` with `what: "message"`), oldest first. */
export function agentMessages(audit: AuditEventView[]): Said[] {
  return audit
    .flatMap((e) => {
      if (e.kind !== "agent.reported") return [];
      const p = e.payload as { what?: unknown; detail?: { text?: unknown } } | null;
      if (p?.what !== "message" || typeof p.detail?.text !== "string") return [];
      return [{ seq: e.seq, at: e.at, text: p.detail.text }];
    })
    .sort((a, b) => a.seq - b.seq);
}

export type TimelineItem = { step: StepView } | { said: Said };

/**
 * Steps and the agent's words in the order they happened. Reins records a message when it ends,
 * before the step its request became, so a message goes before the first step that started no
 * earlier than it; the words after the last step (the agent's closing message) go last.
 */
export function interleave(steps: StepView[], said: Said[]): TimelineItem[] {
  const out: TimelineItem[] = [];
  let i = 0;
  for (const step of steps) {
    while (i < said.length && said[i].at <= step.startedAt) out.push({ said: said[i++] });
    out.push({ step });
  }
  while (i < said.length) out.push({ said: said[i++] });
  return out;
}
