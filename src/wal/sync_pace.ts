/**
 * Fsync pacing: how long the WAL's writer waits before its next batch's fsync so that the
 * appends arriving meanwhile share it. Only while appends come in a stream, which the WAL sees
 * as appends queued while the last fsync ran: then it waits as long as that fsync took, at most
 * `paceMaxMs`. An append that finds the writer idle is written at once, so a lone append (a
 * lone job) never waits, nor does one at a low rate.
 *
 * Why: five nodes on one disk each fsynced per event-loop turn under load, 0.29-0.34 fsyncs a
 * commit at `hookd bench replication`'s maximum rate, and their fsyncs queued on the disk
 * (bench/results/session29/pace/).
 *
 * Owns the decision only; the WAL (wal.ts) reads the clock and waits.
 */

/**
 * Ms to wait before the next batch after an fsync that took `lastSyncMs`, when
 * `queuedDuringSync` appends arrived while it ran. 0: write at once.
 */
export function syncPaceWaitMs(
  lastSyncMs: number,
  paceMaxMs: number,
  queuedDuringSync: boolean,
): number {
  if (paceMaxMs <= 0 || !queuedDuringSync) return 0;
  return Math.min(paceMaxMs, Math.max(0, lastSyncMs));
}
