import { useState } from "react";
import { BackendError } from "../../lib/ipc/backend";

/** What a pairing link carries after `#`: the code and the certificate's fingerprint. */
export function linkParams(hash: string): { code: string; fingerprint: string | null } {
  const p = new URLSearchParams(hash.replace(/^#/, ""));
  return { code: p.get("pair") ?? "", fingerprint: p.get("fp") };
}

/**
 * A browser not yet paired: it exchanges the one-time code from `reins serve pair` (typed, or
 * carried in the link's `#`) for its device token.
 */
export function Pair({ pair, initialCode, fingerprint }: {
  pair: (code: string, fingerprint: string | null) => Promise<{ name: string }>;
  initialCode: string;
  fingerprint: string | null;
}) {
  const [code, setCode] = useState(initialCode);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await pair(code.trim(), fingerprint);
    } catch (err) {
      setError(err instanceof BackendError || err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="pair-page">
      <form className="panel pair" onSubmit={submit} data-testid="pair-form">
        <div className="brand-dark"><span className="logo" aria-hidden>R</span> Reins</div>
        <h1>Pair this device</h1>
        <p className="muted">
          On the machine Reins runs on, run <code>reins serve pair --name "my phone"</code> (or use
          Settings → Remote approvals in the app), then type the code it shows, or open its link.
        </p>
        <label htmlFor="pair-code">Pairing code</label>
        <input id="pair-code" data-testid="pair-code" autoComplete="one-time-code" autoCapitalize="characters"
          spellCheck={false} placeholder="7KQ2M-XD4PA" value={code} onChange={(e) => setCode(e.target.value)} />
        <button className="primary" type="submit" data-testid="pair-submit" disabled={busy || code.trim().length < 10}>
          {busy ? "Pairing…" : "Pair"}
        </button>
        {error && <div className="error" role="alert">{error}</div>}
        <p className="muted small">
          The code works once, for five minutes. This browser then keeps a device token; the machine's
          owner can revoke it at any time (<code>reins serve revoke</code>).
        </p>
      </form>
    </div>
  );
}
