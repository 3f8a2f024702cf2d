import { useState } from "react";
import { createRoot } from "react-dom/client";
import { QueryClient } from "@tanstack/react-query";
import { App } from "./App";
import { tauriBackend } from "./lib/ipc/backend";
import { forgetToken, httpBackend, pair, savedToken } from "./lib/ipc/http";
import { linkParams, Pair } from "./features/pair/Pair";
import "./styles.css";

const client = new QueryClient({
  defaultOptions: { queries: { staleTime: 1000, retry: 1, refetchOnWindowFocus: false } },
});

/** In the desktop app's window Tauri is there; anywhere else this is a browser on `reins serve`. */
const inTauri = "__TAURI_INTERNALS__" in window;

function Web() {
  const link = linkParams(window.location.hash);
  const [token, setToken] = useState<string | null>(link.code ? null : savedToken());
  const signOut = () => {
    forgetToken();
    client.clear();
    setToken(null);
  };
  if (!token) {
    return (
      <Pair
        initialCode={link.code}
        fingerprint={link.fingerprint}
        pair={async (code, fp) => {
          const out = await pair(code, fp);
          // The code is spent: keep it out of the address bar and the history.
          history.replaceState(null, "", window.location.pathname);
          setToken(savedToken());
          return out;
        }}
      />
    );
  }
  return <App backend={httpBackend(token, signOut)} client={client} signOut={signOut} />;
}

const root = document.getElementById("root");
if (root) createRoot(root).render(inTauri ? <App backend={tauriBackend()} client={client} /> : <Web />);
