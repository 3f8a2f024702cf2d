import { useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { BudgetLimits, BudgetMeasure, BudgetReached, BudgetSpent, BudgetView } from "../../lib/ipc/bindings";
import { useBackend } from "../../lib/ipc/context";

const MEASURES: BudgetMeasure[] = ["tokens", "cost", "wall", "steps"];
const NAMES: Record<BudgetMeasure, string> = { tokens: "Tokens", cost: "Cost", wall: "Time driven", steps: "Steps" };

export function limitOf(l: BudgetLimits, m: BudgetMeasure): number | null {
  return m === "tokens" ? l.tokens : m === "cost" ? l.costUsd : m === "wall" ? l.wallSecs : l.steps;
}

export function spentOf(s: BudgetSpent, m: BudgetMeasure): number {
  return m === "tokens" ? s.tokens : m === "cost" ? (s.costUsd ?? 0) : m === "wall" ? s.wallSecs : s.steps;
}

/** An amount of a measure as people read it: "12,000 tokens", "$0.50", "15m 00s", "40 steps". */
export function amount(m: BudgetMeasure, v: number): string {
  if (m === "tokens") return `${Math.round(v).toLocaleString("en-US")} tokens`;
  if (m === "cost") return `$${v.toFixed(2)}`;
  if (m === "steps") return `${Math.round(v).toLocaleString("en-US")} steps`;
  const s = Math.round(v);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

/** "Allow N more": as much again as the limit was. */
export function moreOf(r: BudgetReached): number {
  return r.limit ?? 0;
}

/** What the run spent against each limit of its budget, as bars; at a limit, the card that asks. */
export function Spending({ runId, budget }: { runId: string; budget: BudgetView }) {
  const limited = MEASURES.filter((m) => limitOf(budget.limits, m) != null);
  if (limited.length === 0) return null;
  return (
    <section className="panel budget" data-testid="budget">
      <h2>Budget</h2>
      {limited.map((m) => {
        const limit = limitOf(budget.limits, m) ?? 0;
        const spent = spentOf(budget.spent, m);
        const share = limit > 0 ? Math.min(spent / limit, 1) : 1;
        const over = spent >= limit;
        return (
          <div className="budget-row" key={m} data-testid={`budget-${m}`}>
            <span className="budget-name">{NAMES[m]}</span>
            <div
              className="budget-bar"
              role="progressbar"
              aria-label={`${NAMES[m]} spent`}
              aria-valuemin={0}
              aria-valuemax={limit}
              aria-valuenow={spent}
            >
              <div className={over ? "budget-fill over" : "budget-fill"} style={{ width: `${share * 100}%` }} />
            </div>
            <span className="budget-figures">
              {amount(m, spent)} of {amount(m, limit)} ({Math.round((limit > 0 ? spent / limit : 1) * 100)}%)
            </span>
          </div>
        );
      })}
      {budget.waiting && budget.reached && <AtLimit runId={runId} reached={budget.reached} />}
    </section>
  );
}

/** The card of a run paused at its budget: what it spent, "allow N more" or "stop here". */
function AtLimit({ runId, reached }: { runId: string; reached: BudgetReached }) {
  const backend = useBackend();
  const qc = useQueryClient();
  const [error, setError] = useState<string | null>(null);
  const more = moreOf(reached);
  const done = { onSuccess: () => { setError(null); void qc.invalidateQueries(); }, onError: (e: unknown) => setError((e as Error).message) };
  const allow = useMutation({ mutationFn: () => backend.allowMore(runId, reached.measure, more), ...done });
  const stop = useMutation({ mutationFn: () => backend.stopAtBudget(runId), ...done });
  const busy = allow.isPending || stop.isPending;
  return (
    <div className="budget-card" role="alert" data-testid="budget-card">
      <strong>Paused at its budget.</strong>{" "}
      It spent {amount(reached.measure, reached.spent ?? 0)} of a budget of {amount(reached.measure, reached.limit ?? 0)}.
      Nothing is lost while it waits.
      <div className="row">
        <button className="primary" disabled={busy} onClick={() => allow.mutate()}>
          Allow {amount(reached.measure, more)} more
        </button>
        <button className="danger" disabled={busy} onClick={() => stop.mutate()}>Stop here</button>
      </div>
      {error && <div className="error" role="alert">{error}</div>}
    </div>
  );
}

/** Each limit of `a`, else `b`'s: what a new run gets from the Settings, then policy.toml. */
export function mergeLimits(a: BudgetLimits, b: BudgetLimits): BudgetLimits {
  return {
    tokens: a.tokens ?? b.tokens,
    costUsd: a.costUsd ?? b.costUsd,
    wallSecs: a.wallSecs ?? b.wallSecs,
    steps: a.steps ?? b.steps,
  };
}

export const NO_LIMITS: BudgetLimits = { tokens: null, costUsd: null, wallSecs: null, steps: null };

/** A budget's four limits as inputs; an empty one is no limit (time in minutes). */
export function BudgetFields({ value, onChange, placeholder }: { value: BudgetLimits; onChange: (b: BudgetLimits) => void; placeholder?: BudgetLimits }) {
  const num = (s: string): number | null => {
    const t = s.trim();
    if (t === "") return null;
    const n = Number(t);
    return Number.isFinite(n) ? n : null;
  };
  const shown = (v: number | null) => (v == null ? "" : String(v));
  const hint = (v: number | null | undefined) => (v == null ? "no limit" : String(v));
  return (
    <div className="budget-fields row">
      <label className="small">Tokens
        <input name="budget-tokens" inputMode="numeric" value={shown(value.tokens)} placeholder={hint(placeholder?.tokens)}
          onChange={(e) => onChange({ ...value, tokens: num(e.target.value) })} />
      </label>
      <label className="small">Cost (US$)
        <input name="budget-cost" inputMode="decimal" value={shown(value.costUsd)} placeholder={hint(placeholder?.costUsd)}
          onChange={(e) => onChange({ ...value, costUsd: num(e.target.value) })} />
      </label>
      <label className="small">Minutes driven
        <input name="budget-minutes" inputMode="numeric" value={value.wallSecs == null ? "" : String(value.wallSecs / 60)}
          placeholder={placeholder?.wallSecs == null ? "no limit" : String(placeholder.wallSecs / 60)}
          onChange={(e) => { const m = num(e.target.value); onChange({ ...value, wallSecs: m == null ? null : Math.round(m * 60) }); }} />
      </label>
      <label className="small">Steps
        <input name="budget-steps" inputMode="numeric" value={shown(value.steps)} placeholder={hint(placeholder?.steps)}
          onChange={(e) => onChange({ ...value, steps: num(e.target.value) })} />
      </label>
    </div>
  );
}
