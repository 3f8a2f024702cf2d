import { afterEach, describe, expect, it, vi } from "vitest";
import { BackendError } from "./backend";
import { httpBackend, pair, savedToken, forgetToken } from "./http";

type Seen = { url: string; method: string; headers: Record<string, string>; body: unknown };

function mockFetch(answer: (s: Seen) => Response) {
  const seen: Seen[] = [];
  vi.stubGlobal("fetch", async (url: string, init: RequestInit = {}) => {
    const s: Seen = {
      url,
      method: init.method ?? "GET",
      headers: (init.headers ?? {}) as Record<string, string>,
      body: init.body ? JSON.parse(init.body as string) : undefined,
    };
    seen.push(s);
    return answer(s);
  });
  return seen;
}

const json = (v: unknown, status = 200) => new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json" } });

afterEach(() => {
  vi.unstubAllGlobals();
  forgetToken();
});

describe("the HTTP backend", () => {
  it("sends each command to its route with the device's token", async () => {
    const seen = mockFetch(() => json({ ok: true }));
    const b = httpBackend("reins_dev_abc", () => {});
    await b.listApprovals(null);
    await b.approve("0193a1b2-0000", { scope: "once", pattern: null, editedArgs: null, note: null, expectHash: "ab".repeat(32) });
    await b.reject("0193a1b2-0000", "not now", null);
    await b.memoryList("prefs", null);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      "GET /api/approvals",
      "POST /api/approvals/0193a1b2-0000/approve",
      "POST /api/approvals/0193a1b2-0000/reject",
      "GET /api/memory?category=prefs",
    ]);
    expect(seen.every((s) => s.headers.authorization === "Bearer reins_dev_abc")).toBe(true);
    expect(seen[2].body).toEqual({ reason: "not now", siblings: false });
    expect(b.face).toBe("web");
  });

  it("turns {code, message} into a BackendError and a 401 into signing out", async () => {
    mockFetch((s) => (s.url.includes("approve") ? json({ code: "superseded", message: "replaced" }, 409) : json({ code: "unauthorized", message: "pair" }, 401)));
    const out = vi.fn();
    const b = httpBackend("reins_dev_abc", out);
    const e = await b.approve("0193a1b2", { scope: "once", pattern: null, editedArgs: null, note: null, expectHash: "0".repeat(64) }).catch((e) => e);
    expect(e).toBeInstanceOf(BackendError);
    expect((e as BackendError).code).toBe("superseded");
    await b.listRuns().catch(() => {});
    expect(out).toHaveBeenCalledTimes(1);
  });

  it("refuses what only the desktop app does, without asking the server", async () => {
    const seen = mockFetch(() => json({}));
    const b = httpBackend("t", () => {});
    await expect(b.startPlanRun("/p", "/w")).rejects.toThrow(/not offered in the browser/);
    await expect(b.keySet("k", "secret")).rejects.toThrow(/not offered/);
    expect(seen).toHaveLength(0);
  });

  it("pairs, keeps the token, and checks the certificate the link named", async () => {
    mockFetch(() => json({ device: { name: "phone" }, token: "reins_dev_t", fingerprint: "AB:CD" }));
    await expect(pair("7KQ2M-XD4PA", "ffff")).rejects.toThrow(/certificate/);
    expect(savedToken()).toBeNull();
    await expect(pair("7KQ2M-XD4PA", "abcd")).resolves.toEqual({ name: "phone" });
    expect(savedToken()).toBe("reins_dev_t");
  });

  it("hears changes over the event stream", async () => {
    const body = new ReadableStream({
      start(c) {
        const enc = new TextEncoder();
        c.enqueue(enc.encode("event: ready\ndata: {}\n\n"));
        c.enqueue(enc.encode('event: changed\ndata: {"pending":2,"newApprovals":["a1"]}\n\n'));
      },
    });
    mockFetch(() => new Response(body, { status: 200 }));
    const b = httpBackend("t", () => {});
    const got: unknown[] = [];
    const off = b.onChanged((e) => got.push(e));
    await vi.waitFor(() => expect(got).toHaveLength(2));
    expect(got[1]).toEqual({ pending: 2, newApprovals: ["a1"] });
    off();
  });
});
