// UI-only state (which screen, what is selected) in a tiny store; server state lives in TanStack
// Query.
import { useSyncExternalStore } from "react";

export type View = "approvals" | "runs" | "memory" | "audit" | "rules" | "policy" | "settings";

export interface UiState {
  view: View;
  runId: string | null;
  approvalId: string | null;
}

let state: UiState = { view: "approvals", runId: null, approvalId: null };
const subs = new Set<() => void>();

export function setUi(patch: Partial<UiState>) {
  state = { ...state, ...patch };
  subs.forEach((s) => s());
}

export function resetUi(s: UiState = { view: "approvals", runId: null, approvalId: null }) {
  state = s;
  subs.forEach((f) => f());
}

export function useUi(): UiState {
  return useSyncExternalStore(
    (cb) => {
      subs.add(cb);
      return () => subs.delete(cb);
    },
    () => state,
  );
}
