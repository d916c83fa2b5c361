/**
 * What long-running subcommands (`node`, `cluster`, `sink`) share: JSON-lines output and
 * waiting for SIGINT/SIGTERM.
 *
 * Owns signal-listener registration and removal; it never exits the process (main.ts does).
 */

/** Prints `value` as one JSON line on stdout: what supervisors and tests parse. */
export function printJsonLine(value: Record<string, unknown>): void {
  console.log(JSON.stringify(value));
}

export interface StopSignal {
  /** Resolves with the first of SIGINT or SIGTERM received. */
  received: Promise<Deno.Signal>;
  /** Removes the listeners; call it once the signal (or another reason to stop) arrived. */
  dispose(): void;
}

/** Listens for SIGINT and SIGTERM until `dispose`. */
export function listenForStopSignal(): StopSignal {
  const { promise, resolve } = Promise.withResolvers<Deno.Signal>();
  const handlers = (["SIGINT", "SIGTERM"] as const).map((signal) => {
    const handler = () => resolve(signal);
    Deno.addSignalListener(signal, handler);
    return [signal, handler] as const;
  });
  return {
    received: promise,
    dispose: () => {
      for (const [signal, handler] of handlers) Deno.removeSignalListener(signal, handler);
    },
  };
}
