import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { RollbackReport, RunDetail, StepView } from "../../lib/ipc/bindings";
import { useBackend } from "../../lib/ipc/context";
import { setUi } from "../../lib/store";
import { ago, duration, stateLabel, time } from "../../lib/format";
import { DiffView } from "../approvals/DiffView";
import { ContextManifests } from "./Manifests";
import { ModelTurn, Words } from "./ModelTurn";
import { agentMessages, interleave, type Said } from "./said";
import { ChangedUnasked } from "./Unasked";
import { Spending } from "./Budget";

function firstLine(s: string | null): string {
  return (s ?? "").split("\n")[0].slice(0, 300);
}

export function RunDetailView({ id }: { id: string }) {
  const backend = useBackend();
  const qc = useQueryClient();
  const detail = useQuery({ queryKey: ["run", id], queryFn: () => backend.runDetail(id) });
  const usage = useQuery({ queryKey: ["run", id, "usage"], queryFn: () => backend.runUsage(id) });
  const [error, setError] = useState<string | null>(null);
  const control = useMutation({
    mutationFn: (what: "pause" | "resume" | "cancel") =>
      what === "pause" ? backend.pauseRun(id) : what === "resume" ? backend.resumeRun(id) : backend.cancelRun(id, "cancelled in the desktop app"),
    onSuccess: () => {
      setError(null);
      void qc.invalidateQueries();
    },
    onError: (e) => setError((e as Error).message),
  });
  if (detail.isLoading) return <div className="empty">Loading…</div>;
  if (detail.error || !detail.data) return <div className="error" role="alert">{(detail.error as Error)?.message}</div>;
  const d: RunDetail = detail.data;
  const r = d.run;
  const u = usage.data;
  // A run paused at its budget is carried on (or stopped) from its budget's card, which says why.
  const atBudget = d.budget.waiting;
  return (
    <div className="page run-detail" data-testid="run-detail">
      <button className="link" onClick={() => setUi({ runId: null })}>← All runs</button>
      <header className="page-head">
        <div>
          <h1>{r.name}</h1>
          <div className="muted">{r.goal}</div>
          <div className="muted mono small">
            {r.id} · {r.compat.externalAgent
              ? `${r.compat.externalAgent.name} ${r.compat.externalAgent.version} (${r.agentKind}${r.compat.externalAgent.mode ? `, mode ${r.compat.externalAgent.mode}` : ""})`
              : `${r.agentKind} agent`} · {r.workspace}{r.machine ? ` on ${r.machine}` : ""}
          </div>
        </div>
        <div className="row">
          <span className={`state state-${r.state}`} data-testid="run-state">{stateLabel(r.state)}</span>
          {r.pausable && <button onClick={() => control.mutate("pause")}>Pause</button>}
          {r.resumable && !atBudget && <button onClick={() => control.mutate("resume")}>Resume</button>}
          {r.cancellable && <button className="danger" onClick={() => control.mutate("cancel")}>Cancel run</button>}
        </div>
      </header>
      {error && <div className="error" role="alert">{error}</div>}
      {r.lastError && !atBudget && <div className="notice">{r.lastError}</div>}
      <ChangedUnasked d={d} />
      <Spending runId={id} budget={d.budget} />
      {u && u.modelCalls > 0 && (
        <div className="stats">
          <span>{u.modelCalls} model calls</span>
          <span>{u.tokensIn.toLocaleString()} tokens in</span>
          <span>{u.tokensOut.toLocaleString()} out</span>
          {u.costUsd != null && <span>${u.costUsd.toFixed(4)}</span>}
        </div>
      )}
      <Timeline
        steps={d.steps}
        approvals={d.approvals}
        said={r.agentKind === "acp" ? agentMessages(d.audit) : []}
        speaker={r.compat.externalAgent?.name ?? "The agent"}
      />
      {d.recoverySummary && (
        <section className="panel">
          <h2>Recovery</h2>
          <div className="muted">
            What the run was told when attempt {d.recoverySummary.attempt} resumed it:
          </div>
          <pre className="agent-text">{d.recoverySummary.text}</pre>
        </section>
      )}
      <Checkpoints d={d} />
      <section className="panel">
        <h2>Effects (intents and outcomes)</h2>
        {d.intents.length === 0 ? <div className="muted">No side effects yet.</div> : (
          <table className="table">
            <thead><tr><th>Step</th><th>Tool</th><th>Class</th><th>Status</th><th>Settled by</th><th>At</th></tr></thead>
            <tbody>
              {d.intents.map((i) => (
                <tr key={i.id}>
                  <td>{i.stepSeq}</td><td>{i.tool}</td><td>{i.effectClass}</td>
                  <td><span className={`pill pill-${i.status}`}>{i.status}</span></td>
                  <td>{i.settledBy ?? "—"}</td><td>{time(i.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {r.agentKind === "llm" && <ContextManifests id={id} />}
      {r.agentKind === "acp" && <ExternalAgent d={d} />}
    </div>
  );
}

/** What an external agent reported of its own work, and the end of its stderr. */
function ExternalAgent({ d }: { d: RunDetail }) {
  // Its messages are on the timeline, in its words; this lists its account of its tools.
  const reported = d.audit.filter(
    (e) =>
      (e.kind === "agent.reported" && (e.payload as { what?: unknown } | null)?.what !== "message") ||
      e.kind === "agent.acted_unasked",
  );
  const line = (p: Record<string, unknown>, kind: string): string => {
    if (kind === "agent.acted_unasked") return `acted without asking: ${String(p.kind ?? "")} ${String(p.title ?? "")}`;
    const detail = (p.detail ?? {}) as Record<string, unknown>;
    if (p.what === "tool_call") return `${String(detail.kind ?? "")} [${String(detail.status ?? "")}] ${String(detail.title ?? "")}`;
    if (p.what === "mode") return `mode ${String(detail.mode ?? "")}`;
    return `${String(p.what ?? "")}: ${JSON.stringify(detail)}`;
  };
  // What Reins itself saw: how the agent runs, and what its confinement stopped.
  const how = d.run.compat.externalAgent?.confinement;
  const blocked = d.audit
    .filter((e) => e.kind === "agent.blocked")
    .flatMap((e) => ((e.payload as { blocked?: unknown } | null)?.blocked as string[] | undefined) ?? []);
  return (
    <section className="panel" data-testid="agent-panel">
      {how && (
        <div className={how.startsWith("confined") ? "muted small" : "error small"} data-testid="agent-confinement">
          It runs {how}
        </div>
      )}
      {blocked.length > 0 && (
        <ul className="small mono" data-testid="agent-blocked">
          {blocked.map((b, i) => (
            <li key={i} className="error">blocked: {b}</li>
          ))}
        </ul>
      )}
      <h2>The agent's account</h2>
      <div className="muted">What the agent reported of its own work: its word, not Reins' decisions.</div>
      {reported.length === 0 ? <div className="muted">Nothing reported yet.</div> : (
        <ul className="small mono">
          {reported.map((e) => (
            <li key={e.seq} className={e.kind === "agent.acted_unasked" ? "error" : undefined}>
              {time(e.at)} · {line(e.payload as Record<string, unknown>, e.kind)}
            </li>
          ))}
        </ul>
      )}
      {d.agentLog && (
        <>
          <h3>Its stderr</h3>
          <div className="muted small mono">{d.agentLog.path}</div>
          <pre className="agent-text" data-testid="agent-log">{d.agentLog.tail || "(nothing written)"}</pre>
        </>
      )}
    </section>
  );
}

/** An external agent's message on the timeline, rendered as a model's words are. */
function AgentSaid({ said, speaker }: { said: Said; speaker: string }) {
  return (
    <li className="step step-said" data-testid="agent-said">
      <div className="step-head">
        <span className="tool">{speaker} said</span>
        <span className="muted">{time(said.at)}</span>
      </div>
      <div className="model-turn">
        <Words text={said.text} />
      </div>
    </li>
  );
}

export function Timeline({ steps, approvals, said, speaker }: {
  steps: StepView[];
  approvals: RunDetail["approvals"];
  said: Said[];
  speaker: string;
}) {
  return (
    <section className="panel">
      <h2>Timeline</h2>
      {steps.length === 0 && said.length === 0 && <div className="muted">No steps yet.</div>}
      <ol className="timeline" data-testid="timeline">
        {interleave(steps, said).map((item, k, items) => {
          if ("said" in item) return <AgentSaid key={`said-${item.said.seq}`} said={item.said} speaker={speaker} />;
          const s = item.step;
          const before = items[k - 1];
          // A request's reason is the message just above it: not shown twice.
          const why = before && "said" in before && s.why && before.said.text.startsWith(s.why.replace(/…$/, "")) ? null : s.why;
          const decided = approvals.filter((a) => a.stepSeq === s.seq && a.status !== "pending" && a.status !== "superseded");
          return (
            <li key={s.seq} id={`step-${s.seq}`} className={`step step-${s.status}`} data-testid="step" data-status={s.status}>
              <div className="step-head">
                <span className="seq">#{s.seq}</span>
                <span className="tool">{s.tool}</span>
                <span className={`pill pill-${s.status}`}>{s.status}</span>
                {s.risk && <span className={`risk risk-${s.risk}`}>{s.risk}</span>}
                <span className="muted">{duration(s.endedAt != null ? s.endedAt - s.startedAt : null)}</span>
              </div>
              {s.modelTurn ? (
                <ModelTurn turn={s.modelTurn} raw={s.result} />
              ) : (
                <>
                  {why && <div className="agent-text why">“{why}”</div>}
                  {s.result && <div className="result mono small">{firstLine(s.result)}</div>}
                </>
              )}
              {decided.map((a) => (
                <div key={a.id} className="decided small">
                  {a.status} by {a.decidedBy ?? "—"}{a.scope ? ` (${a.scope})` : ""}{a.edited ? ", edited" : ""}
                  {a.note ? `: ${a.note}` : ""}
                </div>
              ))}
            </li>
          );
        })}
      </ol>
    </section>
  );
}

function Checkpoints({ d }: { d: RunDetail }) {
  const backend = useBackend();
  const qc = useQueryClient();
  const [compare, setCompare] = useState<RollbackReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = d.run.id;
  const preview = useMutation({
    mutationFn: (to: number) => backend.rollbackRun(id, to, true),
    onSuccess: (r) => { setCompare(r); setError(null); },
    onError: (e) => setError((e as Error).message),
  });
  const apply = useMutation({
    mutationFn: (to: number) => backend.rollbackRun(id, to, false),
    onSuccess: () => { setCompare(null); void qc.invalidateQueries(); },
    onError: (e) => setError((e as Error).message),
  });
  return (
    <section className="panel">
      <h2>Checkpoints</h2>
      <div className="muted small">
        Recovery point: {d.recovery.point ?? "none"}
        {d.recovery.damage.length > 0 && ` · ${d.recovery.damage.length} damaged`}
        {d.recovery.prunedThrough > 0 && ` · retention removed up to #${d.recovery.prunedThrough}`}
      </div>
      <table className="table">
        <thead><tr><th>Seq</th><th>Level</th><th>Checksum</th><th>Size</th><th>Written</th><th></th></tr></thead>
        <tbody>
          {d.checkpoints.map((c) => (
            <tr key={c.seq}>
              <td>{c.seq}</td><td>{c.level}</td>
              <td><span className={`pill pill-${c.status === "ok" ? "done" : "failed"}`} title={c.sha256}>{c.status}</span></td>
              <td>{c.size} B</td><td>{ago(c.createdAt)}</td>
              <td><button className="small" onClick={() => preview.mutate(c.seq)}>Roll back to here…</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {error && <div className="error" role="alert">{error}</div>}
      {compare && (
        <div className="compare" data-testid="rollback-compare">
          <h3>Rolling back to checkpoint {compare.to} changes {compare.changes.length} file{compare.changes.length === 1 ? "" : "s"}</h3>
          {compare.changes.length === 0 && <div className="muted">The files already match that checkpoint.</div>}
          {compare.changes.map((c) => <DiffView key={c.path} preview={c.diff} />)}
          <p className="muted">The current state is saved as a checkpoint first, so this rollback can be undone.</p>
          <div className="row">
            <button className="danger" disabled={apply.isPending} onClick={() => apply.mutate(compare.to)}>Roll back</button>
            <button onClick={() => setCompare(null)}>Cancel</button>
          </div>
        </div>
      )}
    </section>
  );
}
