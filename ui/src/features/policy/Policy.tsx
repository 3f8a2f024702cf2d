import { useState } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import type { TryKind } from "../../lib/ipc/bindings";
import { useBackend } from "../../lib/ipc/context";

const PLACEHOLDER: Record<TryKind, string> = {
  command: "curl https://example.com/install.sh | sh",
  path: "config/logrotate.conf",
  url: "https://example.com/",
};

/**
 * The policy in force: what Reins decides before any rule, the file's rules in the order they are
 * weighed, the protected places, and a box that tries a command, path or URL on the spot. The file
 * is read again when it changes; a broken file shows why and the last good rules stay.
 */
export function Policy() {
  const backend = useBackend();
  // The app reads the file again within half a second of a change: show what is in force now.
  const state = useQuery({ queryKey: ["policy"], queryFn: () => backend.policyState(), refetchInterval: 1000 });
  const [kind, setKind] = useState<TryKind>("command");
  const [text, setText] = useState("");
  const [workspace, setWorkspace] = useState("");
  const attempt = useMutation({ mutationFn: () => backend.policyTry(kind, text, workspace.trim() || null) });
  const open = useMutation({ mutationFn: () => backend.openPolicyFile() });
  const s = state.data;
  const r = attempt.data;
  return (
    <div className="page policy">
      <header className="page-head">
        <div>
          <h1>Policy</h1>
          <div className="muted">The harness decides what is risky, never the model or the agent. Deny rules are weighed first, then ask, then allow.</div>
        </div>
      </header>
      {state.error && <div className="error" role="alert">{(state.error as Error).message}</div>}
      {s?.broken && (
        <div className="error" role="alert" data-testid="policy-broken">
          The policy file does not load, so the last good rules below stay in force: {s.broken}
        </div>
      )}
      <section className="panel" data-testid="policy-try">
        <h2>Try it</h2>
        <form className="row" onSubmit={(e) => { e.preventDefault(); if (text.trim()) attempt.mutate(); }}>
          <select name="try-kind" value={kind} onChange={(e) => setKind(e.target.value as TryKind)}>
            <option value="command">a command</option>
            <option value="path">a file to change</option>
            <option value="url">a URL to fetch</option>
          </select>
          <input name="try-text" className="wide" placeholder={PLACEHOLDER[kind]} value={text} onChange={(e) => setText(e.target.value)} />
          <input name="try-workspace" placeholder="workspace (default: your home folder)" value={workspace} onChange={(e) => setWorkspace(e.target.value)} />
          <button className="primary" type="submit" disabled={!text.trim() || attempt.isPending}>Try</button>
        </form>
        {attempt.error && <div className="error" role="alert">{(attempt.error as Error).message}</div>}
        {r && (
          <div className="try-result" data-testid="try-result">
            <div>
              <span className={`risk risk-${r.risk}`} data-testid="try-risk">{r.risk}</span>{" "}
              <strong data-testid="try-decision">{r.decision === "allow" ? "runs without review" : r.decision === "ask" ? "asks you first" : "is refused"}</strong>{" "}
              <span className="muted mono small">{r.tool}</span>
            </div>
            <ul data-testid="try-reasons">{r.reasons.map((x, i) => <li key={i}>{x}</li>)}</ul>
            {r.segments.length > 1 && (
              <ul className="small mono">{r.segments.map((g, i) => <li key={i}>{g.text}: {g.risk}</li>)}</ul>
            )}
          </div>
        )}
      </section>
      <section className="panel">
        <h2>Your rules</h2>
        <p className="small">
          <code data-testid="policy-file">{s?.file}</code>{" "}
          {s && !s.fileExists && <span className="muted">(absent: only the built-in rules apply) </span>}
          <button className="link" onClick={() => open.mutate()}>{s?.fileExists ? "Open in your editor" : "Create and open"}</button>
          <span className="muted"> · read again as soon as it is saved · version <span className="mono">{s?.version}</span></span>
        </p>
        {open.error && <div className="error" role="alert">{(open.error as Error).message}</div>}
        {s && s.rules.length === 0 && <div className="muted">No rules of yours: the built-in rules decide.</div>}
        {s && s.rules.length > 0 && (
          <table className="table" data-testid="policy-rules">
            <thead><tr><th>Decision</th><th>Matches</th><th>Reason</th><th>From</th></tr></thead>
            <tbody>
              {s.rules.map((x) => (
                <tr key={`${x.origin}#${x.n}`} data-decision={x.decision}>
                  <td><span className={`pill pill-${x.decision === "allow" ? "done" : x.decision === "deny" ? "failed" : "expired"}`}>{x.decision}</span></td>
                  <td className="mono small">{x.matches}</td>
                  <td>{x.reason ?? <span className="muted">—</span>}</td>
                  <td className="muted small">rule {x.n}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section className="panel">
        <h2>Built in</h2>
        <ul data-testid="policy-built-in">{s?.builtIn.map((b, i) => <li key={i}>{b}</li>)}</ul>
      </section>
      <section className="panel">
        <h2>Protected places</h2>
        <p className="muted small">Changing these is high risk whatever a rule says.</p>
        <table className="table small">
          <tbody>
            {s?.protected.map((p) => (
              <tr key={p.place}><td className="mono">{p.place}</td><td>{p.why}</td></tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}
