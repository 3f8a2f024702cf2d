import { createRoot } from "react-dom/client";
import { QueryClient } from "@tanstack/react-query";
import { App } from "./App";
import { tauriBackend } from "./lib/ipc/backend";
import "./styles.css";

const client = new QueryClient({
  defaultOptions: { queries: { staleTime: 1000, retry: 1, refetchOnWindowFocus: false } },
});

const root = document.getElementById("root");
if (root) createRoot(root).render(<App backend={tauriBackend()} client={client} />);
