// The Backend over HTTP, for a browser paired with `reins serve`. The views are the desktop app's;
// only the transport differs. Every request carries the device's bearer token (no cookies), and
// live updates come over Server-Sent Events read with fetch, so the token stays in a header.
import type { Backend } from "./backend";
import { BackendError } from "./backend";
import { commands, type ErrorCode, type ExportSummary, type IpcError } from "./bindings";

const TOKEN_KEY = "reins.token";

export function savedToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function forgetToken() {
  localStorage.removeItem(TOKEN_KEY);
}

/** Exchanges a pairing code for this browser's token, and keeps it. */
export async function pair(code: string, expectFingerprint: string | null): Promise<{ name: string }> {
  const r = await fetch("/api/pair", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ code }),
  });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new BackendError(asError(body, r.status));
  const fp = (body.fingerprint as string | null)?.replace(/:/g, "").toUpperCase() ?? null;
  if (expectFingerprint && fp !== expectFingerprint.toUpperCase()) {
    throw new BackendError({
      code: "invalid_input",
      message: "this server's certificate is not the one the pairing link named: do not use it",
    });
  }
  localStorage.setItem(TOKEN_KEY, body.token);
  return { name: body.device.name };
}

function asError(body: unknown, status: number): IpcError {
  const b = body as Partial<IpcError> | null;
  if (b && typeof b.code === "string" && typeof b.message === "string") return b as IpcError;
  return { code: "invalid_input" as ErrorCode, message: `the server answered ${status}` };
}

type Method = "GET" | "POST" | "PUT" | "DELETE";
type Call = [Method, string, unknown?];

const q = (params: Record<string, string | null | undefined>) => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) s.set(k, v);
  const t = s.toString();
  return t ? `?${t}` : "";
};
const seg = encodeURIComponent;

/** The commands a browser may use, as routes. Anything else is the desktop app's alone. */
const ROUTES: { [K in keyof typeof commands]?: (...args: Parameters<(typeof commands)[K]>) => Call } = {
  listApprovals: (status) => ["GET", `/api/approvals${q({ status })}`],
  approval: (id) => ["GET", `/api/approvals/${seg(id)}`],
  approve: (id, approve) => ["POST", `/api/approvals/${seg(id)}/approve`, approve],
  approveBatch: (batch) => ["POST", "/api/approvals/batch/approve", batch],
  reject: (id, reason, siblings) => ["POST", `/api/approvals/${seg(id)}/reject`, { reason, siblings: siblings ?? false }],
  listGrants: () => ["GET", "/api/grants"],
  revokeGrant: (id) => ["POST", `/api/grants/${seg(id)}/revoke`, {}],
  listRuns: () => ["GET", "/api/runs"],
  runDetail: (id) => ["GET", `/api/runs/${seg(id)}`],
  runContext: (id) => ["GET", `/api/runs/${seg(id)}/context`],
  runUsage: (id) => ["GET", `/api/runs/${seg(id)}/usage`],
  pauseRun: (id) => ["POST", `/api/runs/${seg(id)}/pause`, {}],
  resumeRun: (id) => ["POST", `/api/runs/${seg(id)}/resume`, {}],
  cancelRun: (id, reason) => ["POST", `/api/runs/${seg(id)}/cancel`, { reason }],
  allowMore: (id, measure, more) => ["POST", `/api/runs/${seg(id)}/budget/allow`, { measure, more }],
  stopAtBudget: (id) => ["POST", `/api/runs/${seg(id)}/budget/stop`, {}],
  memoryList: (category, search) => ["GET", `/api/memory${q({ category, search })}`],
  memoryShow: (id) => ["GET", `/api/memory/${seg(id)}`],
  memoryEdit: (id, value) => ["PUT", `/api/memory/${seg(id)}`, { value }],
  memoryDelete: (id) => ["DELETE", `/api/memory/${seg(id)}`],
  memorySuggestions: () => ["GET", "/api/memory/suggestions"],
  memoryAccept: (id) => ["POST", `/api/memory/suggestions/${seg(id)}/accept`, {}],
  memoryDismiss: (id) => ["POST", `/api/memory/suggestions/${seg(id)}/dismiss`, {}],
  memorySettings: () => ["GET", "/api/memory/settings"],
  auditPage: (request) => ["POST", "/api/audit/page", request],
  auditVerify: () => ["GET", "/api/audit/verify"],
  keyStatus: (names) => ["GET", `/api/keys${q({ names: names.join(",") })}`],
  providerDefaults: () => ["GET", "/api/provider"],
};

export function httpBackend(token: string, onUnauthorized: () => void): Backend {
  const headers = (json: boolean): HeadersInit => ({
    authorization: `Bearer ${token}`,
    ...(json ? { "content-type": "application/json" } : {}),
  });
  const send = async ([method, path, body]: Call): Promise<Response> => {
    const r = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (r.status === 401) onUnauthorized();
    if (!r.ok) throw new BackendError(asError(await r.json().catch(() => null), r.status));
    return r;
  };
  const wrapped: Record<string, unknown> = {};
  for (const name of Object.keys(commands)) {
    const route = (ROUTES as Record<string, ((...a: unknown[]) => Call) | undefined>)[name];
    wrapped[name] = route
      ? async (...args: unknown[]) => (await send(route(...args))).json()
      : async () => {
          throw new BackendError({
            code: "not_found",
            message: "not offered in the browser: use the desktop app or the reins command on the machine",
          });
        };
  }
  // The export downloads as a file; the summary comes in headers.
  wrapped.auditExport = async (format: string, filter: unknown): Promise<ExportSummary> => {
    const r = await send(["POST", "/api/audit/export", { format, filter }]);
    const blob = await r.blob();
    const name = `reins-audit.${format}`;
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
    a.click();
    URL.revokeObjectURL(a.href);
    const n = (h: string) => Number(r.headers.get(h) ?? "0");
    return {
      path: `${name} (downloaded)`,
      format: format as ExportSummary["format"],
      count: n("x-reins-count"),
      firstSeq: null,
      lastSeq: null,
      head: null,
      bytes: blob.size,
      sha256: r.headers.get("x-reins-sha256") ?? "",
      redactedOnExport: 0,
      elapsedMs: 0,
    };
  };
  const listeners = new Set<(e: { pending: number; newApprovals: string[] }) => void>();
  let stream: AbortController | null = null;
  const connect = () => {
    if (stream) return;
    stream = new AbortController();
    void readEvents(stream.signal, headers(false), (e) => listeners.forEach((l) => l(e)), onUnauthorized);
  };
  return {
    ...(wrapped as Omit<Backend, "face" | "onChanged" | "onOpenApproval">),
    face: "web",
    onChanged: (cb) => {
      listeners.add(cb);
      connect();
      return () => {
        listeners.delete(cb);
        if (listeners.size === 0) {
          stream?.abort();
          stream = null;
        }
      };
    },
    onOpenApproval: () => () => {},
  };
}

/** Reads `/api/events` until aborted, reconnecting after a dropped connection. */
async function readEvents(
  signal: AbortSignal,
  headers: HeadersInit,
  emit: (e: { pending: number; newApprovals: string[] }) => void,
  onUnauthorized: () => void,
) {
  let backoff = 500;
  while (!signal.aborted) {
    try {
      const r = await fetch("/api/events", { headers, signal });
      if (r.status === 401) return onUnauthorized();
      if (!r.ok || !r.body) throw new Error(`events: ${r.status}`);
      backoff = 500;
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let end: number;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const data = block
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart())
            .join("\n");
          // `ready` (connected) and `changed` both mean: fetch what is shown.
          if (data) {
            try {
              const e = JSON.parse(data);
              emit({ pending: e.pending ?? 0, newApprovals: e.newApprovals ?? [] });
            } catch {
              emit({ pending: 0, newApprovals: [] });
            }
          }
        }
      }
    } catch {
      if (signal.aborted) return;
    }
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 10_000);
  }
}
