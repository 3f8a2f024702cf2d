import type { Verification } from "../../lib/ipc/bindings";

/** The query key of the chain verification, which only runs when asked (see App's live data). */
export const VERIFY_KEY = "audit-verify";

const events = (n: number) => `${n} ${n === 1 ? "event" : "events"}`;

/**
 * The badge beside the log: what the last verification found, and how many of the events shown
 * came after it (verification runs when asked, so the log may have grown since; the record of the
 * verification itself is not news).
 */
export function chainLabel(v: Verification, shown: { seq: number; kind: string }[]): string {
  if (!v.intact) return `chain broken: ${v.damage?.detail ?? ""}`;
  const verifiedTo = v.head?.seq ?? 0;
  const newer = shown.filter((e) => e.seq > verifiedTo && e.kind !== "audit.verified").length;
  const base = `chain intact · ${events(v.events)}`;
  return newer > 0 ? `${base} · ${newer} newer, not verified yet` : base;
}
