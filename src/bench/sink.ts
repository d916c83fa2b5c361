/**
 * Moved to src/process/sink.ts (issue 18: the sink is process plumbing, below bench, cli and
 * chaos). Kept only for src/bench/sweep.ts, which another branch owns; delete once it imports
 * src/process/sink.ts.
 */

export * from "../process/sink.ts";
