import { useEffect, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";
import { McpServers } from "./McpServers";
import { AgentsOnThisMachine, ModelServerStatus } from "./Machine";
import { ClaudeCodeHooks } from "./ClaudeCode";
import { RemoteApprovals } from "./RemoteApprovals";
import { TeamDatabase } from "./TeamDatabase";
import { Telemetry } from "./Telemetry";
import { DefaultBudget } from "./DefaultBudget";

export function SettingsView() {
  const backend = useBackend();
  const qc = useQueryClient();
  const info = useQuery({ queryKey: ["info"], queryFn: () => backend.appInfo() });
  const provider = useQuery({ queryKey: ["provider"], queryFn: () => backend.providerDefaults() });
  const [form, setForm] = useState({ baseUrl: "", model: "", key: "" });
  useEffect(() => {
    if (provider.data) setForm({ baseUrl: provider.data.baseUrl, model: provider.data.model, key: provider.data.key ?? "" });
  }, [provider.data]);
  const keyName = form.key.trim();
  const status = useQuery({
    queryKey: ["keys", keyName],
    queryFn: () => backend.keyStatus([keyName]),
    enabled: keyName.length > 0,
  });
  const [secret, setSecret] = useState("");
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const after = (m: string) => ({ onSuccess: () => { setMsg(m); setErr(null); void qc.invalidateQueries(); }, onError: (e: unknown) => { setErr((e as Error).message); setMsg(null); } });
  const save = useMutation({ mutationFn: () => backend.setProviderDefaults({ baseUrl: form.baseUrl, model: form.model, key: keyName || null }), ...after("Provider saved.") });
  const setKey = useMutation({ mutationFn: () => backend.keySet(keyName, secret), ...after("Key stored in the OS keyring."), onSettled: () => setSecret("") });
  const delKey = useMutation({ mutationFn: () => backend.keyDelete(keyName), ...after("Key removed from the keyring.") });
  const [keep, setKeep] = useState(20);
  const gc = useMutation({ mutationFn: (dry: boolean) => backend.cleanUp(keep, dry) });
  const isSet = status.data?.[0]?.set;

  return (
    <div className="page settings">
      <header className="page-head"><h1>Settings</h1></header>
      {msg && <div className="notice">{msg}</div>}
      {err && <div className="error" role="alert">{err}</div>}
      <section className="panel">
        <h2>Model provider</h2>
        <p className="muted">Any OpenAI-compatible server. The default is a local Ollama; nothing leaves this machine unless you point it elsewhere.</p>
        <form className="grid-form" onSubmit={(e) => { e.preventDefault(); save.mutate(); }}>
          <label className="field"><span>Base URL</span><input name="base-url" value={form.baseUrl} onChange={(e) => setForm({ ...form, baseUrl: e.target.value })} /></label>
          <label className="field"><span>Model</span><input name="model" value={form.model} onChange={(e) => setForm({ ...form, model: e.target.value })} /></label>
          <label className="field"><span>API key name (empty: no key, e.g. a local server)</span><input name="key-name" value={form.key} onChange={(e) => setForm({ ...form, key: e.target.value })} placeholder="openai" /></label>
          <div className="row"><button className="primary" type="submit">Save provider</button></div>
        </form>
        <ModelServerStatus />
        {keyName && (
          <div className="key-entry">
            <div>
              Key <code>{keyName}</code>:{" "}
              <span className={`pill ${isSet ? "pill-done" : "pill-failed"}`} data-testid="key-status">
                {status.isLoading ? "checking…" : status.error ? "keyring unavailable" : isSet ? "set" : "not set"}
              </span>
            </div>
            <form className="row" onSubmit={(e) => { e.preventDefault(); if (secret) setKey.mutate(); }}>
              <input type="password" name="secret" autoComplete="off" placeholder="paste the key: it goes straight to the OS keyring" value={secret} onChange={(e) => setSecret(e.target.value)} />
              <button type="submit" disabled={!secret}>Store key</button>
              {isSet && <button type="button" className="danger" onClick={() => delKey.mutate()}>Remove key</button>}
            </form>
            <div className="muted small">The app never shows or stores the key itself; it only knows whether the keyring holds one.</div>
          </div>
        )}
      </section>
      <DefaultBudget />
      <AgentsOnThisMachine />
      <ClaudeCodeHooks />
      <RemoteApprovals />
      <TeamDatabase />
      <Telemetry />
      <McpServers />
      <section className="panel">
        <h2>Policy</h2>
        <p>Policy file: <code>{info.data?.policyFile}</code> {info.data && !info.data.policyFileExists && <span className="muted">(absent: the built-in rules apply — every change and anything not understood asks you)</span>}</p>
        {info.data && (
          <p data-testid="containment" className={info.data.confined ? "muted" : "error"}>
            Commands and agents run {info.data.containment}
          </p>
        )}
        <p className="muted small">Edit it with your editor; the app reads it again as soon as it is saved. The Policy view shows the rules in force and tries commands against them. The harness, not the model, decides what is risky.</p>
      </section>
      <section className="panel">
        <h2>Retention</h2>
        <div className="row">
          <label>Keep the last <input type="number" min={1} max={10000} value={keep} onChange={(e) => setKeep(Math.max(1, Number(e.target.value) || 1))} className="narrow" /> checkpoints of each finished run</label>
          <button onClick={() => gc.mutate(true)}>Preview clean-up</button>
          <button className="danger" onClick={() => gc.mutate(false)}>Clean up now</button>
        </div>
        {gc.data && <pre className="small">{JSON.stringify(gc.data, null, 2)}</pre>}
        {gc.error && <div className="error" role="alert">{(gc.error as Error).message}</div>}
      </section>
      <section className="panel">
        <h2>About</h2>
        <p className="small">Reins {info.data?.version} · data in <code>{info.data?.dataDir}</code> (the <code>reins</code> command line works on the same data at the same time).</p>
      </section>
    </div>
  );
}
