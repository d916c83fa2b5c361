/**
 * Moved to src/process/self_command.ts (issue 18: process plumbing is a layer below the commands).
 * Kept only for src/bench/sweep.ts, which another branch owns; delete once it imports
 * src/process/self_command.ts.
 */

export * from "../process/self_command.ts";
