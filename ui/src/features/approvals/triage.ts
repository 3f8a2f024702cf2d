// Inbox rules that do not need a screen.

/** Batch approval is for low and medium risk only: high risk is decided one at a time. */
export function batchable(items: { risk: string }[]): boolean {
  return items.length > 0 && items.every((a) => a.risk === "low" || a.risk === "medium");
}

/** j/k movement, clamped to the list. */
export function nextIndex(current: number, length: number, step: 1 | -1): number {
  if (length === 0) return 0;
  return Math.min(length - 1, Math.max(0, current + step));
}
