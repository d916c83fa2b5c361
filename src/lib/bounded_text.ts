/**
 * Reads a byte stream as text, up to a bound: the one place our small clients and servers (the
 * CLI's API client and `hookd submit`'s stdin, the bench sink) read a stream they do not trust
 * to be small.
 *
 * Owns only the read. The API's own request bodies (src/api/body.ts: timeouts, memory budget)
 * and the delivery engine's response excerpts (truncated, not refused) read differently.
 */

/** The stream as UTF-8 text, or undefined (the rest cancelled, unread) once it passes `bytesMax`. */
export async function readTextAtMost(
  body: ReadableStream<Uint8Array> | null,
  bytesMax: number,
): Promise<string | undefined> {
  if (body === null) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > bytesMax) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new TextDecoder().decode(bytes);
}
