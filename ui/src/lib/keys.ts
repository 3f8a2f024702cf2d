/** Whether a key press belongs to a text field (or comes with a modifier): screens' own keys stay off. */
export function isTyping(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return true;
  return e.ctrlKey || e.metaKey || e.altKey;
}
