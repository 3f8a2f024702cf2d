// An in-memory Backend for component tests: records every call, serves canned data.
import type { Backend } from "./backend";
import { BackendError } from "./backend";
import type { TelemetrySettings } from "./bindings";
import type { AgentOnPath, ApprovalView, BudgetLimits, AuditEventView, FactView, IpcError, ModelServerCheck, PolicyCheck, PolicyState, RollbackChange, RunSummary, Verification } from "./bindings";

export interface Call {
  name: string;
  args: unknown[];
}

export interface FakeData {
  approvals?: ApprovalView[];
  runs?: RunSummary[];
  facts?: FactView[];
  /** The audit log, newest first, and what verifying it finds. */
  audit?: AuditEventView[];
  verification?: Verification;
  /** What checking the model server finds, and the agents on PATH (name, registered). */
  modelServer?: ModelServerCheck;
  onPath?: AgentOnPath[];
  /** Where `claude` is on PATH (none: not installed); Reins' hooks start installed in these files. */
  claude?: string | null;
  /** Projects whose own settings switch Claude Code's hooks off (`disableAllHooks`). */
  hooksOff?: string[];
  hooksIn?: string[];
  /** The policy in force, and what trying something finds. */
  policy?: PolicyState;
  tried?: PolicyCheck;
  /** A batch approval fails with this error from Rust (nothing is approved). */
  batchError?: IpcError;
  /** Decisions fail with this error from Rust (and the approval is replaced by `replacement`). */
  decisionError?: IpcError;
  replacement?: ApprovalView;
  /** Which face the views are shown in (default the desktop app). */
  face?: "desktop" | "web";
  /** The team database the app is on (default: this machine's own file). */
  teamConnected?: string;
  /** Reading the Team database panel fails with this error from Rust. */
  teamError?: IpcError;
  /** `[budget]` in the policy file. */
  policyBudget?: BudgetLimits;
  /** `telemetry.toml` as saved (default: none, export off). */
  telemetry?: TelemetrySettings;
  /** What rolling a run back changes (the diffs are now → then). */
  rollback?: RollbackChange[];
}

export function fakeBackend(data: FakeData = {}) {
  const calls: Call[] = [];
  const state = {
    approvals: [...(data.approvals ?? [])],
    runs: [...(data.runs ?? [])],
    facts: [...(data.facts ?? [])],
  };
  const hooks = new Set(data.hooksIn ?? []);
  const none: BudgetLimits = { tokens: null, costUsd: null, wallSecs: null, steps: null };
  const budgets = { settings: none, policy: data.policyBudget ?? none };
  const team: { connected: string | null; saved: { url: string; passwordKey: string | null } | null; alerts: "team" | "mine" } = {
    connected: data.teamConnected ?? null,
    saved: data.teamConnected ? { url: data.teamConnected, passwordKey: null } : null,
    alerts: "team",
  };
  const teamView = () => ({
    connected: team.connected,
    saved: team.saved,
    fromEnvironment: false,
    wakeUps: team.connected ? "listening" : "local",
    machine: "laptop",
    alerts: team.alerts,
  });
  const otel: { saved: TelemetrySettings | null; sent: number } = { saved: data.telemetry ?? null, sent: 0 };
  const otelView = () => {
    const on = otel.saved;
    return {
      file: "/home/u/.config/reins/telemetry.toml",
      saved: on,
      inForce: on ? { destination: on.grpc ? on.endpoint : `${on.endpoint.replace(/\/$/, "")}/v1/traces`, source: "/home/u/.config/reins/telemetry.toml", grpc: on.grpc, content: on.content, metrics: on.metrics ? "on" : null } : null,
      problem: null,
      fromEnvironment: null,
      following: on !== null,
      cursor: on && otel.sent ? { destination: "", seq: 9, behind: 0, oldestUnsentAt: null, spans: otel.sent, holder: null, lastError: null, lastErrorAt: null } : null,
    };
  };
  const claudeFile = (project: string | null) => (project === null ? "/home/u/.claude/settings.json" : `${project}/.claude/settings.local.json`);
  const claudeView = (project: string | null) => {
    const file = claudeFile(project);
    const warnings = project !== null && (data.hooksOff ?? []).includes(project)
      ? [`${project}/.claude/settings.json sets disableAllHooks: Claude Code started there calls no hook, Reins' included`]
      : [];
    return { claude: data.claude ?? null, file, installed: hooks.has(file) ? "/usr/bin/reins --data-dir /d hook claude-code" : null, warnings };
  };
  const listeners = new Set<(e: { pending: number; newApprovals: string[] }) => void>();
  const record = (name: string, args: unknown[]) => calls.push({ name, args });
  let serving: string | null = null;
  const devices = [{ id: "0193dddd-0000-7000-8000-000000000001", name: "old phone", createdAt: Date.now() - 86_400_000, lastUsedAt: null, revokedAt: null as number | null }];
  const remote = () => ({ url: serving, fingerprint: null, exposure: serving && !serving.includes("127.0.0.1") ? "listening beyond this machine" : null });
  const handlers: Record<string, (...args: never[]) => unknown> = {
    remoteStatus: () => remote(),
    remoteStart: (listen: string | null) => {
      serving = `http://${listen ?? "127.0.0.1:8787"}/`;
      return remote();
    },
    remoteStop: () => {
      serving = null;
      return remote();
    },
    remotePair: (name: string) => ({
      code: "7KQ2M-XD4PA",
      name,
      expiresAt: Date.now() + 300_000,
      onTimeout: "pause",
      pausedAt: null,
      link: serving ? `${serving}#pair=7KQ2M-XD4PA` : null,
      qr: "data:image/png;base64,iVBORw0KGgo=",
    }),
    listDevices: () => devices.filter((d) => d.revokedAt === null),
    revokeDevice: (id: string) => {
      const d = devices.find((x) => x.id === id);
      if (d) d.revokedAt = Date.now();
      return d;
    },
    listApprovals: () => [...state.approvals],
    listRuns: () => [...state.runs],
    defaultBudget: () => ({ settings: budgets.settings, policy: budgets.policy }),
    setDefaultBudget: (b: BudgetLimits) => {
      if ((b.tokens ?? 1) <= 0 || (b.costUsd ?? 1) <= 0 || (b.steps ?? 1) <= 0) throw new BackendError({ code: "invalid_input", message: "a budget must be above zero" });
      budgets.settings = b;
      return { settings: b, policy: budgets.policy };
    },
    allowMore: () => ({}),
    stopAtBudget: () => ({}),
    approve: (id: string) => {
      if (data.decisionError) {
        state.approvals = data.replacement ? [data.replacement] : state.approvals.filter((a) => a.id !== id);
        throw new BackendError(data.decisionError);
      }
      state.approvals = state.approvals.filter((a) => a.id !== id);
      return {};
    },
    approveBatch: (batch: { cards: { id: string; actionHash: string }[] }) => {
      if (data.batchError) throw new BackendError(data.batchError);
      state.approvals = state.approvals.filter((a) => !batch.cards.some((c) => c.id === a.id));
      return batch.cards.map(() => ({}));
    },
    reject: (id: string) => {
      state.approvals = state.approvals.filter((a) => a.id !== id);
      return {};
    },
    memoryList: () => [...state.facts],
    memoryDelete: (id: string) => {
      state.facts = state.facts.filter((f) => f.id !== id);
      return null;
    },
    memorySettings: () => ({ enabled: true, threshold: 0.7, categories: ["preferences"] }),
    memorySuggestions: () => [],
    checkModelServer: () =>
      data.modelServer ?? { baseUrl: "http://127.0.0.1:11434/v1", model: "qwen3-coder", answers: false, models: [], hasModel: false, problem: "nothing answers" },
    agentsOnPath: () => (data.onPath ?? []).map((a) => ({ ...a })),
    registerFoundAgent: (name: string) => {
      const found = (data.onPath ?? []).find((a) => a.agent.name === name);
      if (!found) throw new BackendError({ code: "invalid_input", message: `no agent ${name} on PATH` });
      found.registered = true;
      return found.agent;
    },
    claudeHooks: (project: string | null) => claudeView(project),
    setClaudeHooks: (project: string | null, install: boolean) => {
      if (project === "") throw new BackendError({ code: "invalid_input", message: "the project folder must be an absolute path: " });
      const file = claudeFile(project);
      hooks.delete(file);
      if (install) hooks.add(file);
      return claudeView(project);
    },
    policyState: () =>
      data.policy ?? { file: "/home/u/.config/reins/policy.toml", fileExists: false, broken: null, version: "rules/1:0", builtIn: [], rules: [], protected: [] },
    policyTry: () => {
      if (!data.tried) throw new BackendError({ code: "invalid_input", message: "nothing to try" });
      return data.tried;
    },
    teamDatabase: () => {
      if (data.teamError) throw new BackendError(data.teamError);
      return teamView();
    },
    setAlertScope: (scope: "team" | "mine") => {
      team.alerts = scope;
      return scope;
    },
    checkTeamDatabase: (db: { url: string; passwordKey: string | null }) => ({
      url: db.url,
      reachable: !db.url.includes(":hunter2@"),
      schemaVersion: null,
      supportedSchema: 20261207000000,
      problem: db.url.includes(":hunter2@") ? "take the password out of the URL: name the keyring entry that holds it instead" : null,
    }),
    connectTeamDatabase: (db: { url: string; passwordKey: string | null }) => {
      team.saved = db;
      return null;
    },
    disconnectTeamDatabase: () => {
      team.saved = null;
      return null;
    },
    keySet: () => null,
    telemetrySettings: () => otelView(),
    // As Rust checks: an http(s) URL, and no credential written as a plain value.
    saveTelemetrySettings: (settings: TelemetrySettings | null) => {
      if (settings && !/^https?:\/\//.test(settings.endpoint.trim()))
        throw new BackendError({ code: "invalid_input", message: `endpoint in the new settings (nothing was saved): "${settings.endpoint}" is not a URL` });
      const plainKey = settings?.headers.find((h) => h.value !== null && /auth|key|token/i.test(h.name));
      if (plainKey)
        throw new BackendError({ code: "invalid_input", message: `header ${plainKey.name} in telemetry.toml: a credential is not kept in a file; store it with \`reins keys set NAME\`` });
      otel.saved = settings;
      return otelView();
    },
    telemetrySendNow: () => {
      if (!otel.saved) return null;
      otel.sent += 12;
      return { events: 30, spans: 12, caughtUp: true, heldElsewhere: false };
    },
    rollbackRun: (id: string, to: number, dryRun: boolean) => ({
      run: id, to, dryRun, changes: [...(data.rollback ?? [])], snapshot: dryRun ? null : to + 1, checkpoint: dryRun ? null : to + 2,
    }),
    resumeRun: () => null,
    auditPage: () => ({ events: [...(data.audit ?? [])], next: null }),
    auditVerify: () =>
      data.verification ?? { intact: true, events: 0, head: null, anchor: { path: "", status: "missing", head: null }, damage: null, anchorCreatedAt: [], keys: { status: "unkeyed", keyId: null, vouched: 0, unkeyed: 0, keyedSince: null, others: [], unvouchedFrom: null, unvouched: 0, detail: null }, elapsedMs: 0 },
  };
  const backend = new Proxy({} as Backend, {
    get(_t, prop: string) {
      if (prop === "onChanged")
        return (cb: (e: { pending: number; newApprovals: string[] }) => void) => {
          listeners.add(cb);
          return () => listeners.delete(cb);
        };
      if (prop === "onOpenApproval") return () => () => {};
      if (prop === "face") return data.face ?? "desktop";
      return async (...args: unknown[]) => {
        record(prop, args);
        const h = handlers[prop];
        if (!h) throw new Error(`fake backend: ${prop} is not faked`);
        return (h as (...a: unknown[]) => unknown)(...args);
      };
    },
  });
  return {
    backend,
    calls,
    state,
    /** What Rust sends when something changed. */
    emitChanged: () => listeners.forEach((l) => l({ pending: state.approvals.length, newApprovals: [] })),
  };
}
