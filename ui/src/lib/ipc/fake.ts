// An in-memory Backend for component tests: records every call, serves canned data.
import type { Backend } from "./backend";
import { BackendError } from "./backend";
import type { ApprovalView, FactView, IpcError, RunSummary } from "./bindings";

export interface Call {
  name: string;
  args: unknown[];
}

export interface FakeData {
  approvals?: ApprovalView[];
  runs?: RunSummary[];
  facts?: FactView[];
  /** Decisions fail with this error from Rust (and the approval is replaced by `replacement`). */
  decisionError?: IpcError;
  replacement?: ApprovalView;
}

export function fakeBackend(data: FakeData = {}) {
  const calls: Call[] = [];
  const state = {
    approvals: [...(data.approvals ?? [])],
    runs: [...(data.runs ?? [])],
    facts: [...(data.facts ?? [])],
  };
  const listeners = new Set<(e: { pending: number; newApprovals: string[] }) => void>();
  const record = (name: string, args: unknown[]) => calls.push({ name, args });
  const handlers: Record<string, (...args: never[]) => unknown> = {
    listApprovals: () => [...state.approvals],
    listRuns: () => [...state.runs],
    approve: (id: string) => {
      if (data.decisionError) {
        state.approvals = data.replacement ? [data.replacement] : state.approvals.filter((a) => a.id !== id);
        throw new BackendError(data.decisionError);
      }
      state.approvals = state.approvals.filter((a) => a.id !== id);
      return {};
    },
    reject: (id: string) => {
      state.approvals = state.approvals.filter((a) => a.id !== id);
      return {};
    },
    memoryList: () => [...state.facts],
    memoryDelete: (id: string) => {
      state.facts = state.facts.filter((f) => f.id !== id);
      return null;
    },
    memorySettings: () => ({ enabled: true, threshold: 0.7, categories: ["preferences"] }),
    memorySuggestions: () => [],
    auditPage: () => ({ events: [], next: null }),
    auditVerify: () => ({ intact: true, events: 0, head: null, anchor: { path: "", status: "missing", head: null }, damage: null, anchorCreatedAt: [], elapsedMs: 0 }),
  };
  const backend = new Proxy({} as Backend, {
    get(_t, prop: string) {
      if (prop === "onChanged")
        return (cb: (e: { pending: number; newApprovals: string[] }) => void) => {
          listeners.add(cb);
          return () => listeners.delete(cb);
        };
      if (prop === "onOpenApproval") return () => () => {};
      return async (...args: unknown[]) => {
        record(prop, args);
        const h = handlers[prop];
        if (!h) throw new Error(`fake backend: ${prop} is not faked`);
        return (h as (...a: unknown[]) => unknown)(...args);
      };
    },
  });
  return {
    backend,
    calls,
    state,
    /** What Rust sends when something changed. */
    emitChanged: () => listeners.forEach((l) => l({ pending: state.approvals.length, newApprovals: [] })),
  };
}
