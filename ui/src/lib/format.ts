/** "3 s ago", "5 min ago", "2 h ago", "4 d ago". */
export function ago(ms: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function duration(ms: number | null | undefined): string {
  if (ms == null) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function time(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}

/** Enough of an id to tell two apart: UUIDv7s made in the same minute share their first 8 hex
 * digits (the clock), so the next group is kept too. A prefix, as the CLI accepts. */
export function shortId(id: string): string {
  return id.slice(0, 13);
}

export function stateLabel(state: string): string {
  return state.replace(/_/g, " ");
}

/** A secret Reins keeps sealed at rest travels as a `⟦sealed:…⟧` token: shown, it is a mark. */
const SEALED = /⟦sealed:[A-Za-z0-9_-]+⟧/g;

export const SEALED_SHOWN = "[sealed secret]";

export function shownSealed(text: string): string {
  return text.replace(SEALED, SEALED_SHOWN);
}

export function hasSealed(text: string): boolean {
  return text.search(SEALED) >= 0;
}
