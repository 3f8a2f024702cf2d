import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useBackend } from "../../lib/ipc/context";
import type { Pairing } from "../../lib/ipc/bindings";
import { ago } from "../../lib/format";

/** Settings → Remote approvals: `reins serve` inside the app, pairing, and the paired devices. */
export function RemoteApprovals() {
  const backend = useBackend();
  const qc = useQueryClient();
  const status = useQuery({ queryKey: ["remote"], queryFn: () => backend.remoteStatus() });
  const devices = useQuery({ queryKey: ["devices"], queryFn: () => backend.listDevices() });
  const [listen, setListen] = useState("127.0.0.1:8787");
  const [name, setName] = useState("");
  const [pairing, setPairing] = useState<Pairing | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const onError = (e: unknown) => setErr((e as Error).message);
  const refresh = () => {
    setErr(null);
    void qc.invalidateQueries({ queryKey: ["remote"] });
    void qc.invalidateQueries({ queryKey: ["devices"] });
  };
  const start = useMutation({ mutationFn: () => backend.remoteStart(listen), onSuccess: refresh, onError });
  const stop = useMutation({ mutationFn: () => backend.remoteStop(), onSuccess: () => { setPairing(null); refresh(); }, onError });
  const pair = useMutation({ mutationFn: () => backend.remotePair(name), onSuccess: (p) => { setPairing(p); refresh(); }, onError });
  const revoke = useMutation({ mutationFn: (id: string) => backend.revokeDevice(id), onSuccess: refresh, onError });
  const url = status.data?.url ?? null;
  const live = (devices.data ?? []).filter((d) => d.revokedAt === null);

  return (
    <section className="panel" data-testid="remote-approvals">
      <h2>Remote approvals</h2>
      <p className="muted">
        Approve from a browser or a phone. Off until you start it; only devices you pair can see or decide anything, and
        each decision is audited with the device's name. Safe ways to reach it from elsewhere: docs/remote-approvals.md.
      </p>
      {err && <div className="error" role="alert">{err}</div>}
      {url ? (
        <div className="row">
          <span>Serving at <code data-testid="remote-url">{url}</code></span>
          <button data-testid="remote-stop" onClick={() => stop.mutate()} disabled={stop.isPending}>Stop</button>
        </div>
      ) : (
        <form className="row" onSubmit={(e) => { e.preventDefault(); start.mutate(); }}>
          <label className="field"><span>Listen on</span><input name="listen" value={listen} onChange={(e) => setListen(e.target.value)} /></label>
          <button className="primary" type="submit" data-testid="remote-start" disabled={start.isPending}>Start</button>
        </form>
      )}
      {status.data?.exposure && <div className="notice" role="alert">{status.data.exposure}</div>}
      {status.data?.fingerprint && <p className="small">Certificate SHA-256: <code>{status.data.fingerprint}</code></p>}

      <h3>Pair a device</h3>
      <form className="row" onSubmit={(e) => { e.preventDefault(); if (name.trim()) pair.mutate(); }}>
        <input name="device-name" placeholder="my phone" value={name} onChange={(e) => setName(e.target.value)} />
        <button type="submit" data-testid="pair-device" disabled={!name.trim() || pair.isPending}>Pair…</button>
      </form>
      {pairing && (
        <div className="pairing" data-testid="pairing">
          <img src={pairing.qr} alt="QR code of the pairing link" width={200} height={200} />
          <div>
            <div>Code for <strong>{pairing.name}</strong>: <code className="pairing-code" data-testid="pairing-code">{pairing.code}</code></div>
            <div className="muted small">Works once, for five minutes.</div>
            {pairing.link ? <div className="small">Or open <code>{pairing.link}</code></div> : <div className="small">Start serving, then open its address on the device and type the code.</div>}
          </div>
        </div>
      )}

      <h3>Paired devices</h3>
      {live.length === 0 ? (
        <p className="muted">None yet.</p>
      ) : (
        <table className="table" data-testid="devices">
          <thead><tr><th>Name</th><th>Paired</th><th>Last used</th><th /></tr></thead>
          <tbody>
            {live.map((d) => (
              <tr key={d.id}>
                <td>{d.name}</td>
                <td>{ago(d.createdAt)}</td>
                <td>{d.lastUsedAt ? ago(d.lastUsedAt) : "never"}</td>
                <td><button className="danger small" data-testid="revoke-device" onClick={() => revoke.mutate(d.id)}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
