import { useEffect, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { BudgetLimits } from "../../lib/ipc/bindings";
import { useBackend } from "../../lib/ipc/context";
import { BudgetFields, NO_LIMITS } from "../runs/Budget";

/** The budget every new run gets where it names none; `[budget]` in policy.toml fills in the rest. */
export function DefaultBudget() {
  const backend = useBackend();
  const qc = useQueryClient();
  const current = useQuery({ queryKey: ["default-budget"], queryFn: () => backend.defaultBudget() });
  const [form, setForm] = useState<BudgetLimits>(NO_LIMITS);
  useEffect(() => {
    if (current.data) setForm(current.data.settings);
  }, [current.data]);
  const save = useMutation({
    mutationFn: () => backend.setDefaultBudget(form),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ["default-budget"] }),
  });
  return (
    <section className="panel" data-testid="default-budget">
      <h2>Default budget</h2>
      <p className="muted">
        What a new run may spend before it pauses and asks you to allow more or stop it there. A run started with its own
        budget uses that; a limit left empty here comes from <code>[budget]</code> in the policy file (shown greyed).
      </p>
      <form onSubmit={(e) => { e.preventDefault(); save.mutate(); }}>
        <BudgetFields value={form} onChange={setForm} placeholder={current.data?.policy} />
        <div className="row"><button className="primary" type="submit" disabled={save.isPending}>Save default budget</button></div>
      </form>
      {save.isSuccess && <div className="notice">Default budget saved.</div>}
      {save.error && <div className="error" role="alert">{(save.error as Error).message}</div>}
    </section>
  );
}
