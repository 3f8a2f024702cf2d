"""LangGraph's SqliteSaver (sync), as the anchor the durable step is compared with.

A three-node cycle (a -> b -> c -> a ...) over a state of about 5 KB, checkpointed after every
node by `SqliteSaver` into a SQLite file (WAL, as the saver sets it up). Prints one line:
`checkpoints N seconds S rate R` (checkpoints per second), for `scripts/bench-langgraph`.

    python langgraph_anchor.py STEPS DIR
"""

import os
import sqlite3
import sys
import time
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, StateGraph


class State(TypedDict):
    count: int
    notes: str


def node(name):
    def step(state: State) -> dict:
        n = state["count"] + 1
        line = f"{name} {n}: something still to do\n"
        return {"count": n, "notes": (line * (5000 // len(line) + 1))[:5000]}

    return step


def main() -> None:
    steps = int(sys.argv[1])
    folder = sys.argv[2]
    graph = StateGraph(State)
    for name in ("a", "b", "c"):
        graph.add_node(name, node(name))
    graph.set_entry_point("a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_conditional_edges("c", lambda s: END if s["count"] >= steps else "a")
    path = os.path.join(folder, "langgraph.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    app = graph.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": steps + 10}
    start = time.perf_counter()
    app.invoke({"count": 0, "notes": ""}, config)
    took = time.perf_counter() - start
    written = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    print(f"checkpoints {written} seconds {took:.4f} rate {written / took:.1f}")


if __name__ == "__main__":
    main()
