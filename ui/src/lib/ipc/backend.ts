// The one door to Rust. Only this folder imports @tauri-apps/*: screens get a `Backend`, the real
// one here, the HTTP one (`http.ts`) in a browser, or the fake one in tests.
import { commands, events, type ErrorCode, type IpcError } from "./bindings";

type Commands = typeof commands;
type Ok<R> = R extends { status: "ok"; data: infer D } ? D : never;
type Unwrapped<F> = F extends (...args: infer A) => Promise<infer R> ? (...args: A) => Promise<Ok<R>> : never;

export type Backend = { [K in keyof Commands]: Unwrapped<Commands[K]> } & {
  /** The desktop app, or a browser paired with `reins serve` (which offers only the inbox's part). */
  face: "desktop" | "web";
  /** Something shown changed; returns an unsubscribe function. */
  onChanged(cb: (e: { pending: number; newApprovals: string[] }) => void): () => void;
  /** A notification or the tray asked to show an approval. */
  onOpenApproval(cb: (id: string) => void): () => void;
};

/** An error from Rust, with its stable code. */
export class BackendError extends Error {
  code: ErrorCode;
  constructor(e: IpcError) {
    super(e.message);
    this.code = e.code;
  }
}

function listen<T>(l: { listen(cb: (e: { payload: T }) => void): Promise<() => void> }, cb: (p: T) => void) {
  let off: (() => void) | undefined;
  let gone = false;
  void l.listen((e) => cb(e.payload)).then((u) => (gone ? u() : (off = u)));
  return () => {
    gone = true;
    off?.();
  };
}

export function tauriBackend(): Backend {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(commands)) {
    wrapped[name] = async (...args: unknown[]) => {
      const r = await (fn as (...a: unknown[]) => Promise<{ status: string; data?: unknown; error?: IpcError }>)(...args);
      if (r.status === "ok") return r.data;
      // Tauri itself answers with a bare string (a command the window may not call, say).
      const e = typeof r.error === "string" ? { code: "invalid_input", message: r.error } : r.error;
      throw new BackendError(e as IpcError);
    };
  }
  return {
    ...(wrapped as { [K in keyof Commands]: Unwrapped<Commands[K]> }),
    face: "desktop",
    onChanged: (cb) => listen(events.changed, cb),
    onOpenApproval: (cb) => listen(events.openApproval, (p) => cb(p.id)),
  };
}
