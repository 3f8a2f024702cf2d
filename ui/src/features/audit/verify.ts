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
  const base = `chain intact · ${events(v.events)}${keyed(v)}`;
  return newer > 0 ? `${base} · ${newer} newer, not verified yet` : base;
}

/** What the events' MACs say: vouched for by this machine's key, not keyed, or not checked. */
function keyed(v: Verification): string {
  const k = v.keys;
  if (k.status === "checked") {
    const others = k.others.reduce((n, o) => n + o.events, 0);
    return ` · ${k.vouched} vouched for by this machine's key${others > 0 ? ` · ${events(others)} by other machines' keys` : ""}`;
  }
  if (k.status === "unkeyed") return " · not keyed (no OS keyring)";
  return " · keys not checked";
}
