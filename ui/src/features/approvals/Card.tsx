import { useState, type ReactNode } from "react";
import type { ApprovalView } from "../../lib/ipc/bindings";
import { ago, shortId, time } from "../../lib/format";
import { setUi } from "../../lib/store";
import { isStaged, Preview, RiskBadge } from "./Preview";

/** What the agent wants to do, why, and exactly what will change — readable in seconds. */
export function Card({ a, runName, children, leaveOut, onLeaveOut }: {
  a: ApprovalView;
  runName: string;
  children: ReactNode;
  /** A staged card's files the person unticked, and how to change that (none: no choice). */
  leaveOut?: string[];
  onLeaveOut?: (paths: string[]) => void;
}) {
  const c = a.context;
  // When this approval first reached the screen (wall clock, ms): the e2e suite measures latency.
  const [shownAt] = useState(() => performance.timeOrigin + performance.now());
  return (
    <article className="card" data-testid="approval-card" data-approval={a.id}
      data-shown-at={shownAt.toFixed(1)}>
      <header className="card-head">
        <RiskBadge risk={a.risk} />
        <h2>
          <span className="tool">{a.tool}</span> <code className="target">{a.subject}</code>
        </h2>
        <span className="muted">
          <button className="link" onClick={() => setUi({ view: "runs", runId: a.runId })}>{runName}</button>
          {" · "}<span data-testid="card-agent">{a.agent}</span>
          {" · "}step {a.stepSeq} · asked {ago(a.createdAt)} · {shortId(a.id)}
        </span>
      </header>
      <Deadline a={a} />

      {a.reasons.length > 0 && (
        <section className="why-risky">
          <h3>Why this needs you</h3>
          <ul>{a.reasons.map((r, i) => <li key={i}>{r}</li>)}</ul>
        </section>
      )}

      <section className="context-summary">
        <dl>
          <dt>Goal</dt>
          <dd data-testid="goal">{c.goal}</dd>
          <dt>Agent's reason</dt>
          <dd className="agent-text">{c.why ?? <em>none given</em>}</dd>
          <dt>Progress</dt>
          <dd>
            {c.stepsDone} step{c.stepsDone === 1 ? "" : "s"} done
            {c.recent.length > 0 && <ul className="recent">{c.recent.map((r, i) => <li key={i}>{r}</li>)}</ul>}
          </dd>
          {c.read.length > 0 && (<><dt>It read</dt><dd>{c.read.map((p) => <code key={p} className="chip">{p}</code>)}</dd></>)}
          {(c.pending ?? []).length > 0 && (<><dt>Queued after this</dt><dd><ul>{(c.pending ?? []).map((p, i) => <li key={i}>{p}</li>)}</ul></dd></>)}
          {(c.constraints ?? []).length > 0 && (<><dt>Constraints</dt><dd><ul>{(c.constraints ?? []).map((p, i) => <li key={i}>{p}</li>)}</ul></dd></>)}
          {a.facts.length > 0 && (
            <><dt>Profile facts used</dt><dd><ul>{a.facts.map((f) => <li key={f.id}>{f.fact ?? <em>deleted since</em>}</li>)}</ul></dd></>
          )}
        </dl>
      </section>

      <section className="preview">
        <h3>{a.edited ? "As you edited it (this is what runs)" : isStaged(a) ? "What the command did, staged in a copy of the workspace" : a.tool.startsWith("fs.") && a.tool !== "fs.read" ? "Exactly what will change" : "Exactly what will run"}</h3>
        <Preview a={a} leaveOut={leaveOut} onLeaveOut={onLeaveOut} />
        {a.runs && !isStaged(a) && (
          <div className={a.runs.startsWith("confined") ? "muted small" : "error small"} data-testid="card-runs">
            How it will run: {a.runs}
          </div>
        )}
      </section>
      {children}
    </article>
  );
}

/** What happens if nobody decides: the card pauses (stays open) or expires (refused) at its time. */
export function Deadline({ a }: { a: ApprovalView }) {
  if (a.status !== "pending") return null;
  if (a.pausedAt != null) {
    return (
      <p className="deadline paused" data-testid="card-deadline">
        Paused since {time(a.pausedAt)}: nobody decided in time, so the run waits for you. Decide
        whenever you are ready, and it goes on.
      </p>
    );
  }
  const then = a.onTimeout === "pause" ? "pauses: the run waits, nothing is lost" : "expires and the action is refused";
  return (
    <p className="deadline muted" data-testid="card-deadline">
      If nobody decides by {time(a.expiresAt)}, it {then}.
    </p>
  );
}
