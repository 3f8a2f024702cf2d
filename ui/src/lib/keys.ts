/** Whether a key press belongs to a text field (or comes with a modifier): screens' own keys stay off. */
export function isTyping(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  // A tick box or a radio takes no letters: a screen's keys still work after clicking one.
  const choice = t?.tagName === "INPUT" && ["checkbox", "radio"].includes((t as HTMLInputElement).type);
  if (t && !choice && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return true;
  return e.ctrlKey || e.metaKey || e.altKey;
}
