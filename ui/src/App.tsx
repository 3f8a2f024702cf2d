import { useEffect } from "react";
import { QueryClientProvider, useQuery, useQueryClient, type QueryClient } from "@tanstack/react-query";
import type { Backend } from "./lib/ipc/backend";
import { BackendProvider, useBackend } from "./lib/ipc/context";
import { setUi, useUi, type View } from "./lib/store";
import { Inbox } from "./features/approvals/Inbox";
import { VERIFY_KEY } from "./features/audit/verify";
import { MODEL_CHECK_KEY } from "./features/settings/Machine";
import { Runs } from "./features/runs/Runs";
import { RunDetailView } from "./features/runs/RunDetail";
import { Memory } from "./features/memory/Memory";
import { Audit } from "./features/audit/Audit";
import { Rules } from "./features/rules/Rules";
import { SettingsView } from "./features/settings/Settings";
import { Policy } from "./features/policy/Policy";

const NAV: { view: View; label: string; key: string; web: boolean }[] = [
  { view: "approvals", label: "Approvals", key: "1", web: true },
  { view: "runs", label: "Runs", key: "2", web: true },
  { view: "memory", label: "Memory", key: "3", web: true },
  { view: "audit", label: "Audit log", key: "4", web: true },
  { view: "rules", label: "Rules", key: "5", web: true },
  // The policy file and the machine's settings are edited on the machine.
  { view: "policy", label: "Policy", key: "6", web: false },
  { view: "settings", label: "Settings", key: "7", web: false },
];

/** `signOut`: a browser forgets its device token (the desktop app has none). */
export function App({ backend, client, signOut }: { backend: Backend; client: QueryClient; signOut?: () => void }) {
  return (
    <BackendProvider backend={backend}>
      <QueryClientProvider client={client}>
        <Shell signOut={signOut} />
      </QueryClientProvider>
    </BackendProvider>
  );
}

/** Refetch what is shown whenever Rust says something changed. */
function useLiveData() {
  const backend = useBackend();
  const qc = useQueryClient();
  useEffect(() => {
    // Not the chain verification: verifying appends an `audit.verified` event, which is itself a
    // change, so refreshing it on every change would verify forever. It runs when asked. Nor the
    // model server check, which asks the user's server over the network.
    const offChanged = backend.onChanged(
      () => void qc.invalidateQueries({ predicate: (q) => q.queryKey[0] !== VERIFY_KEY && q.queryKey[0] !== MODEL_CHECK_KEY }),
    );
    const offOpen = backend.onOpenApproval((id) => setUi({ view: "approvals", approvalId: id }));
    return () => {
      offChanged();
      offOpen();
    };
  }, [backend, qc]);
}

function Shell({ signOut }: { signOut?: () => void }) {
  useLiveData();
  const ui = useUi();
  const backend = useBackend();
  const pending = useQuery({ queryKey: ["approvals", "pending"], queryFn: () => backend.listApprovals(null) });
  const count = pending.data?.length ?? 0;
  return (
    <div className="shell">
      <nav className="sidebar" aria-label="Views">
        <div className="brand">
          <span className="logo" aria-hidden>R</span> Reins
        </div>
        {NAV.filter((n) => backend.face === "desktop" || n.web).map((n) => (
          <button
            key={n.view}
            className={`nav ${ui.view === n.view ? "active" : ""}`}
            data-view={n.view}
            onClick={() => setUi({ view: n.view, runId: n.view === "runs" ? null : ui.runId })}
          >
            <span>{n.label}</span>
            {n.view === "approvals" && count > 0 && (
              <span className="badge" data-testid="pending-count">{count}</span>
            )}
          </button>
        ))}
        {signOut && (
          <button className="nav sign-out" data-testid="sign-out" onClick={signOut}
            title="Forget this browser's device token (revoke it on the machine: reins serve revoke)">
            <span>Sign out</span>
          </button>
        )}
      </nav>
      <main className="content">
        {ui.view === "approvals" && <Inbox />}
        {ui.view === "runs" && (ui.runId ? <RunDetailView id={ui.runId} /> : <Runs />)}
        {ui.view === "memory" && <Memory />}
        {ui.view === "audit" && <Audit />}
        {ui.view === "rules" && <Rules />}
        {ui.view === "policy" && <Policy />}
        {ui.view === "settings" && <SettingsView />}
      </main>
    </div>
  );
}
