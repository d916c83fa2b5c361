/**
 * A fake hookd node for the CLI tests: a Deno.serve on 127.0.0.1 that answers every request
 * with one fixed answer and records what it was sent, so a test sees the requests a `hookd`
 * subprocess made and the exit code it ended with.
 */

export interface FakeNode {
  readonly url: string;
  /** Bodies of the requests it received, as text. */
  readonly bodies: string[];
  /** Their Idempotency-Key headers. */
  readonly keys: (string | null)[];
  close(): Promise<void>;
}

/** A node that answers every request with `answer` (status and JSON or text body). */
export function fakeNode(answer: { status: number; body: string; contentType?: string }): FakeNode {
  const bodies: string[] = [];
  const keys: (string | null)[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      keys.push(request.headers.get("idempotency-key"));
      bodies.push(await request.text());
      return new Response(answer.body, {
        status: answer.status,
        headers: { "content-type": answer.contentType ?? "application/json" },
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    bodies,
    keys,
    close: () => server.shutdown(),
  };
}
