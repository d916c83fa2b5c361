/**
 * Reads a request body with a byte bound, a deadline and a shared budget, so that neither a
 * huge body, nor a client that trickles one, nor many of them at once can hold much memory.
 *
 * Owns the read loop and its one timer (on the injected `Runtime`). Must not parse the body:
 * it returns bytes, or why there are none.
 */

import type { Runtime } from "../lib/runtime.ts";
import { err, ok, type Result } from "../lib/result.ts";

export type BodyFailure =
  /** Declared or streamed past `bytesMax`; the rest is left unread. */
  | "too_large"
  /** Not complete within `timeoutMs`. */
  | "timeout"
  /** The stream failed (the client went away, or sent a malformed chunked body). */
  | "aborted"
  /** A chunk did not fit the shared budget (`take` said no); the rest is left unread. */
  | "over_budget";

export interface BodyLimits {
  readonly bytesMax: number;
  /** Counted from the call (the headers are in by then); armed on `runtime`. */
  readonly timeoutMs: number;
  readonly runtime: Runtime;
  /**
   * Asked for each chunk's bytes before it is kept; false ends the read with `over_budget`.
   * The caller gives back what it granted (success or not) once it is done with the body.
   */
  readonly take?: (bytes: number) => boolean;
}

const EMPTY = new Uint8Array(0);

export async function readBoundedBody(
  request: Request,
  limits: BodyLimits,
): Promise<Result<Uint8Array, BodyFailure>> {
  const declared = request.headers.get("content-length");
  // A declared length over the bound is refused before a byte is read.
  if (declared !== null && !(Number(declared) <= limits.bytesMax)) return err("too_large");
  if (request.body === null) return ok(EMPTY);

  const reader = request.body.getReader();
  let timedOut = false;
  const cancelTimer = limits.runtime.setTimer(limits.timeoutMs, () => {
    timedOut = true;
    // Cancelling settles the pending read with `done`; the flag tells that apart from an end.
    reader.cancel("body read timeout").catch(() => {});
  });
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (timedOut) return err("timeout");
      if (done) break;
      total += value.byteLength;
      if (total > limits.bytesMax) {
        reader.cancel("body too large").catch(() => {});
        return err("too_large");
      }
      if (limits.take !== undefined && !limits.take(value.byteLength)) {
        reader.cancel("body over budget").catch(() => {});
        return err("over_budget");
      }
      chunks.push(value);
    }
  } catch {
    return err(timedOut ? "timeout" : "aborted");
  } finally {
    cancelTimer();
  }
  if (chunks.length === 1) return ok(chunks[0]!);
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return ok(bytes);
}
