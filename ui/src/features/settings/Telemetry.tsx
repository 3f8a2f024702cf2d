import { useEffect, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";
import type { TelemetryHeader, TelemetrySettings, TelemetryView } from "../../lib/ipc/bindings";

type Row = TelemetryHeader & { kind: "value" | "key"; secret: string };

const empty: TelemetrySettings = { endpoint: "", content: false, metrics: true, serviceName: null, grpc: false, headers: [] };

const rowOf = (h: TelemetryHeader): Row => ({ ...h, kind: h.key !== null ? "key" : "value", secret: "" });
const headerOf = (r: Row): TelemetryHeader =>
  r.kind === "key" ? { name: r.name, value: null, key: r.key ?? "", prefix: r.prefix } : { name: r.name, value: r.value ?? "", key: null, prefix: "" };

function Now({ view }: { view: TelemetryView }) {
  if (view.problem) return <span className="error" role="alert">Not exporting: {view.problem}</span>;
  const on = view.inForce;
  if (!on) return <>Off: no trace leaves this machine.</>;
  const c = view.cursor;
  return (
    <>
      Sending to <code>{on.destination}</code>{on.grpc ? " over gRPC" : ""} (set by {on.source}) · content {on.content ? "on, redacted" : "off"} · metrics {on.metrics ? "on" : "off"}
      {!view.following && " · not followed by the app now"}
      {c && (
        <>
          <br />
          {c.spans} spans sent · {c.behind === 0 ? "caught up" : `${c.behind} events to send`}
          {c.lastError && <span className="error"> · last error: {c.lastError}</span>}
        </>
      )}
    </>
  );
}

/** Settings → Traces: where this machine sends OpenTelemetry, with its credentials in the keyring. */
export function Telemetry() {
  const backend = useBackend();
  const qc = useQueryClient();
  // While spans go out, the lag and the last error are read again every few seconds.
  const view = useQuery({ queryKey: ["telemetry"], queryFn: () => backend.telemetrySettings(), refetchInterval: (q) => (q.state.data?.inForce ? 3000 : false) });
  const [form, setForm] = useState<TelemetrySettings>(empty);
  const [rows, setRows] = useState<Row[]>([]);
  useEffect(() => {
    const saved = view.data?.saved;
    if (saved) {
      setForm(saved);
      setRows(saved.headers.map(rowOf));
    }
  }, [view.data?.saved]);
  const done = { onSuccess: (v: TelemetryView) => qc.setQueryData(["telemetry"], v) };
  const save = useMutation({
    mutationFn: async () => {
      // A credential typed here goes straight to the OS keyring under the entry it names.
      for (const r of rows) {
        if (r.kind === "key" && r.key?.trim() && r.secret) await backend.keySet(r.key.trim(), r.secret);
      }
      setRows(rows.map((r) => ({ ...r, secret: "" })));
      return backend.saveTelemetrySettings({ ...form, headers: rows.map(headerOf) });
    },
    ...done,
  });
  const off = useMutation({ mutationFn: () => backend.saveTelemetrySettings(null), ...done });
  const send = useMutation({
    mutationFn: () => backend.telemetrySendNow(),
    onSettled: () => void qc.invalidateQueries({ queryKey: ["telemetry"] }),
  });
  const v = view.data;
  const error = (save.error ?? off.error ?? send.error) as Error | null;
  const set = (i: number, change: Partial<Row>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));

  return (
    <section className="panel" data-testid="telemetry">
      <h2>Traces (OpenTelemetry)</h2>
      <p className="muted">
        Send each run to Jaeger, Tempo, Langfuse, Phoenix or MLflow as a trace: attempts, model calls with tokens, tool calls, and every review with who decided and how long it waited. Built from the audit log after each step commits, so a collector that is down never slows a run; it catches up when it is back.
      </p>
      <p data-testid="telemetry-now">
        {view.error ? <span className="error" role="alert">{(view.error as Error).message}</span> : !v ? "Looking…" : <Now view={v} />}
      </p>
      {v?.fromEnvironment && (
        <div className="notice">{v.fromEnvironment} is set where the app runs: it wins over what is saved here.</div>
      )}
      <form className="grid-form" onSubmit={(e) => { e.preventDefault(); if (form.endpoint.trim()) save.mutate(); }}>
        <label className="field">
          <span>Collector URL ({form.grpc ? "OTLP over gRPC: the address, usually port 4317" : <>OTLP over HTTP, usually port 4318; <code>/v1/traces</code> is added</>})</span>
          <input name="otel-endpoint" value={form.endpoint} placeholder="http://localhost:4318" onChange={(e) => setForm({ ...form, endpoint: e.target.value })} />
        </label>
        <label className="field">
          <span>Service name</span>
          <input name="otel-service" value={form.serviceName ?? ""} placeholder="reins" onChange={(e) => setForm({ ...form, serviceName: e.target.value || null })} />
        </label>
        <label className="span-all">
          <input type="checkbox" name="otel-content" checked={form.content} onChange={(e) => setForm({ ...form, content: e.target.checked })} />{" "}
          Send content: goals, arguments, model replies and reviewers&apos; reasons (secrets are redacted as in the audit log)
        </label>
        <label className="span-all">
          <input type="checkbox" name="otel-grpc" checked={form.grpc} onChange={(e) => setForm({ ...form, grpc: e.target.checked })} />{" "}
          Send over gRPC instead of HTTP (Jaeger, Tempo and the OpenTelemetry Collector take both)
        </label>
        <label className="span-all">
          <input type="checkbox" name="otel-metrics" checked={form.metrics} onChange={(e) => setForm({ ...form, metrics: e.target.checked })} />{" "}
          Send metrics too (<code>/v1/metrics</code>: runs by state, reviews waiting, review waits, decisions, tokens and cost)
        </label>
        <fieldset className="headers span-all" data-testid="otel-headers">
          <legend>Headers sent with every export</legend>
          {rows.map((r, i) => (
            <div className="row" key={i}>
              <input aria-label="Header name" name={`otel-header-${i}`} value={r.name} placeholder="authorization" onChange={(e) => set(i, { name: e.target.value })} />
              <select aria-label="Header kind" value={r.kind} onChange={(e) => set(i, { kind: e.target.value as Row["kind"] })}>
                <option value="value">value</option>
                <option value="key">keyring entry</option>
              </select>
              {r.kind === "value" ? (
                <input aria-label="Header value" name={`otel-value-${i}`} value={r.value ?? ""} placeholder="not a credential" onChange={(e) => set(i, { value: e.target.value })} />
              ) : (
                <>
                  <input aria-label="Prefix" className="narrow" value={r.prefix} placeholder="Bearer " onChange={(e) => set(i, { prefix: e.target.value })} />
                  <input aria-label="Keyring entry" name={`otel-key-${i}`} value={r.key ?? ""} placeholder="langfuse" onChange={(e) => set(i, { key: e.target.value })} />
                  <input aria-label="Credential" type="password" autoComplete="off" name={`otel-secret-${i}`} value={r.secret} placeholder="optional: stored in the keyring" onChange={(e) => set(i, { secret: e.target.value })} />
                </>
              )}
              <button type="button" onClick={() => setRows(rows.filter((_, j) => j !== i))}>Remove</button>
            </div>
          ))}
          <div className="row">
            <button type="button" onClick={() => setRows([...rows, { name: "", value: "", key: null, prefix: "", kind: "value", secret: "" }])}>Add header</button>
            <span className="muted small">Langfuse: <code>authorization</code>, keyring entry, prefix <code>Basic </code>. Phoenix: <code>api_key</code>. MLflow: <code>x-mlflow-experiment-id</code>, a value.</span>
          </div>
        </fieldset>
        <div className="row span-all">
          <button type="submit" className="primary" disabled={!form.endpoint.trim() || save.isPending}>Save and start</button>
          {v?.inForce && <button type="button" disabled={send.isPending} onClick={() => send.mutate()}>{send.isPending ? "Sending…" : "Send now"}</button>}
          {v?.saved && <button type="button" className="danger" disabled={off.isPending} onClick={() => off.mutate()}>Turn off</button>}
        </div>
      </form>
      {send.data !== undefined && (
        <div className="notice" data-testid="otel-sent">
          {send.data === null ? "Export is off." : send.data.heldElsewhere ? "Another Reins process is sending to this collector now." : `Sent ${send.data.spans} spans for ${send.data.events} events${send.data.caughtUp ? "; caught up." : "."}`}
        </div>
      )}
      {error && <div className="error" role="alert">{error.message}</div>}
      <p className="muted small">
        Saved in <code>{v?.file ?? "telemetry.toml"}</code> for this machine; <code>reins run</code>, <code>reins worker</code> and <code>reins serve</code> use it too. A header that carries a key names a keyring entry (or <code>reins keys set NAME</code>); a credential typed as a value is refused.
      </p>
    </section>
  );
}
