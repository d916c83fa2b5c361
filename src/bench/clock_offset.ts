/**
 * How far another process's clock is from ours, for joining times two processes read: the
 * sweep's generator logs when it scheduled each submit, the sink when each job arrived, each
 * on its own `performance.timeOrigin + performance.now()`. Short sweeps on this VM (sessions 39
 * and 40) now and then reported a 200/s step's p50 and p90 as 0 and its p99 as 2-4 ms, and
 * their p99 and maximum were the other runs' less the same 6-8 ms: every latency of the run
 * moved alike, the mark of two clocks that disagree (why they did is not pinned down; a wall
 * clock stepped between the two processes' starts would do it). So each step measures both
 * clocks against the sweep's, records the offsets in its row, and moves the times onto the
 * sweep's clock.
 *
 * NTP's rule: ask the other clock, note ours before and after; its answer is best set against
 * the midpoint, wrong by at most half the round trip, so of a few tries the shortest round trip
 * wins. Owns the arithmetic only: the reads are passed in (HTTP to the sink, a pipe to the
 * generator).
 */

export interface ClockOffset {
  /** Their clock minus ours, ms (subtract it from their times to put them on ours). */
  readonly offsetMs: number;
  /** The round trip of the try it came from, ms: the offset is within half of it. */
  readonly roundTripMs: number;
}

export async function measureClockOffset(
  readTheirs: () => Promise<number>,
  ourNowMs: () => number,
  tries = 5,
): Promise<ClockOffset> {
  let best: ClockOffset | undefined;
  for (let i = 0; i < Math.max(1, tries); i++) {
    const before = ourNowMs();
    const theirs = await readTheirs();
    const after = ourNowMs();
    const roundTripMs = after - before;
    if (best === undefined || roundTripMs < best.roundTripMs) {
      best = { offsetMs: theirs - (before + after) / 2, roundTripMs };
    }
  }
  return best!;
}
