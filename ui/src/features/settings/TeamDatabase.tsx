import { useEffect, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";
import type { AlertScope } from "../../lib/ipc/bindings";

/** Settings → Team database: the shared PostgreSQL this app opens, instead of this machine's own file. */
export function TeamDatabase() {
  const backend = useBackend();
  const qc = useQueryClient();
  const view = useQuery({ queryKey: ["team-database"], queryFn: () => backend.teamDatabase() });
  const [form, setForm] = useState({ url: "", key: "" });
  const [password, setPassword] = useState("");
  useEffect(() => {
    const saved = view.data?.saved;
    if (saved) setForm({ url: saved.url, key: saved.passwordKey ?? "" });
  }, [view.data?.saved]);
  const database = () => ({ url: form.url.trim(), passwordKey: form.key.trim() || null });
  // A password typed here goes straight to the OS keyring under the entry named above.
  const stored = async () => {
    const key = form.key.trim();
    if (key && password) {
      await backend.keySet(key, password);
      setPassword("");
    }
  };
  const check = useMutation({ mutationFn: async () => { await stored(); return backend.checkTeamDatabase(database()); } });
  const connect = useMutation({ mutationFn: async () => { await stored(); return backend.connectTeamDatabase(database()); } });
  const disconnect = useMutation({ mutationFn: () => backend.disconnectTeamDatabase() });
  const alerts = useMutation({
    mutationFn: (scope: AlertScope) => backend.setAlertScope(scope),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ["team-database"] }),
  });
  const v = view.data;
  const result = check.data;
  const error = (check.error ?? connect.error ?? disconnect.error ?? alerts.error) as Error | null;
  const restarting = connect.isSuccess || disconnect.isSuccess;

  return (
    <section className="panel" data-testid="team-database">
      <h2>Team database</h2>
      <p className="muted">
        Share runs, reviews and one audit log with your team: every machine opens the same PostgreSQL. Workers on build boxes carry runs out; anyone approves from any machine.
      </p>
      <p data-testid="team-now">
        {view.error ? (
          <span className="error" role="alert">Cannot tell which database the app is on: {(view.error as Error).message}</span>
        ) : !v ? (
          <>Looking…</>
        ) : v.connected ? (
          <>Connected to <code>{v.connected}</code>{v.wakeUps === "listening" ? " · hearing the team's changes at once" : v.wakeUps === "polling" ? " · cannot listen: changes show at the next poll" : ""}.</>
        ) : (
          <>This machine's own database (not shared).</>
        )}
      </p>
      {v?.connected && (
        <div className="field" role="radiogroup" aria-label="Tray count and notifications on this machine" data-testid="team-alerts">
          <span>Tray count and notifications on this machine</span>
          <label>
            <input type="radio" name="team-alerts" value="team" checked={v.alerts === "team"} disabled={alerts.isPending} onChange={() => alerts.mutate("team")} />{" "}
            The whole team&apos;s runs
          </label>
          <label>
            <input type="radio" name="team-alerts" value="mine" checked={v.alerts === "mine"} disabled={alerts.isPending} onChange={() => alerts.mutate("mine")} />{" "}
            Only runs started on this machine (<code>{v.machine}</code>)
          </label>
          <span className="muted small">The Approvals and Runs views always show the whole team. This choice is kept on this machine only.</span>
        </div>
      )}
      {v?.fromEnvironment && (
        <div className="notice">REINS_DATABASE_URL is set where the app runs: it wins over what is saved here.</div>
      )}
      <form className="grid-form" onSubmit={(e) => { e.preventDefault(); if (form.url.trim()) check.mutate(); }}>
        <label className="field">
          <span>Database URL (no password in it; TLS: <code>?sslmode=verify-full&amp;sslrootcert=/path/ca.pem</code>)</span>
          <input name="team-url" value={form.url} placeholder="postgres://reins@db.internal:5432/reins?sslmode=verify-full" onChange={(e) => setForm({ ...form, url: e.target.value })} />
        </label>
        <label className="field">
          <span>Password: keyring entry name (empty: ~/.pgpass or a client certificate)</span>
          <input name="team-key" value={form.key} placeholder="team-db" onChange={(e) => setForm({ ...form, key: e.target.value })} />
        </label>
        {form.key.trim() && (
          <label className="field">
            <span>Password (optional: stored in the OS keyring as <code>{form.key.trim()}</code>, never in a file)</span>
            <input type="password" name="team-password" autoComplete="off" value={password} onChange={(e) => setPassword(e.target.value)} />
          </label>
        )}
        <div className="row">
          <button type="submit" disabled={!form.url.trim() || check.isPending}>{check.isPending ? "Testing…" : "Test"}</button>
          <button type="button" className="primary" disabled={!form.url.trim() || connect.isPending || restarting} onClick={() => connect.mutate()}>Connect and restart</button>
          {v?.saved && <button type="button" className="danger" disabled={disconnect.isPending || restarting} onClick={() => disconnect.mutate()}>Disconnect and restart</button>}
        </div>
      </form>
      {result && (
        <div className={result.problem ? "error" : "notice"} role={result.problem ? "alert" : undefined} data-testid="team-check">
          {result.problem
            ? <>Cannot use <code>{result.url}</code>: {result.problem}</>
            : <>Reached <code>{result.url}</code>: {result.schemaVersion === null ? "a new database; Reins sets it up on connecting." : `schema ${result.schemaVersion} (this build knows ${result.supportedSchema}).`}</>}
        </div>
      )}
      {error && <div className="error" role="alert">{error.message}</div>}
      {restarting && <div className="notice" data-testid="team-restarting">Runs pause at their next safe point; the app starts again on the new database.</div>}
      <p className="muted small">Or store the password with <code>reins keys set NAME</code>. The <code>reins</code> command line on this machine uses the same choice.</p>
    </section>
  );
}
