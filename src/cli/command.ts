/**
 * Moved to src/process/command.ts (issue 18: process plumbing is a layer below the commands).
 * Kept only for src/bench/sweep.ts, which another branch owns; delete once it imports
 * src/process/command.ts.
 */

export * from "../process/command.ts";
