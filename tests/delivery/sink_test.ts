import { assert, assertEquals } from "../assert.ts";
import { startSink } from "../../src/process/sink.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { readLines } from "../../src/lib/lines.ts";
import { webhookHeaders } from "../../src/delivery/signing.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async function post(url: string, id: string, body: string, extra: Record<string, string> = {}) {
  const headers = webhookHeaders([SECRET], id, Math.floor(Date.now() / 1000), body);
  const response = await fetch(url, { method: "POST", headers: { ...headers, ...extra }, body });
  await response.body?.cancel();
  return response.status;
}

Deno.test("startSink counts receipts, duplicates by webhook-id, latency and bad signatures", async () => {
  const sink = await startSink({ hostname: "127.0.0.1", port: 0, secret: SECRET });
  const url = `http://127.0.0.1:${sink.port}/hook`;
  try {
    const submitted = String(performance.timeOrigin + performance.now() - 5);
    assertEquals(await post(url, "msg_1", "{}", { "hookd-submitted-at": submitted }), 204);
    assertEquals(await post(url, "msg_1", "{}"), 204);
    assertEquals(await post(url, "msg_2", "{}"), 204);
    // Signed for another body: refused and counted, not received.
    const headers = webhookHeaders([SECRET], "msg_3", Math.floor(Date.now() / 1000), "{}");
    const bad = await fetch(url, { method: "POST", headers, body: '{"tampered":1}' });
    await bad.body?.cancel();
    assertEquals(bad.status, 401);
    const response = await fetch(`http://127.0.0.1:${sink.port}/stats`);
    const stats = await response.json();
    assertEquals(
      [stats.received, stats.unique, stats.duplicates, stats.signature_failures],
      [3, 2, 1, 1],
    );
    assertEquals(stats.latency_ms.count, 1);
    assert(stats.latency_ms.max >= 5, `latency ${stats.latency_ms.max}`);
  } finally {
    await sink.close();
  }
});

Deno.test("startSink answers 413 to a body past bodyBytesMax without counting it", async () => {
  const sink = await startSink({ hostname: "127.0.0.1", port: 0, bodyBytesMax: 100 });
  const url = `http://127.0.0.1:${sink.port}/hook`;
  try {
    assertEquals(await post(url, "msg_big", "x".repeat(101)), 413);
    // Chunked, so the sink cannot go by content-length.
    const stream = ReadableStream.from([new TextEncoder().encode("y".repeat(150))]);
    const chunked = await fetch(url, { method: "POST", body: stream });
    await chunked.body?.cancel();
    assertEquals(chunked.status, 413);
    assertEquals(await post(url, "msg_ok", "x".repeat(100)), 204);
    const stats = sink.stats();
    assertEquals([stats.too_large, stats.received], [2, 1]);
  } finally {
    await sink.close();
  }
});

Deno.test("hookd sink prints where it listens and its stats when stopped", async () => {
  const child = hookdCommand(["sink", "--listen", "127.0.0.1:0"]).spawn();
  const lines = readLines(child.stdout);
  const printed: string[] = [];
  try {
    const first = await lines.next();
    assert(first.done !== true, "the sink printed nothing");
    const listening = JSON.parse(first.value).listening as string;
    assert(/^127\.0\.0\.1:\d+$/.test(listening), listening);
    assertEquals(await post(`http://${listening}/`, "msg_a", "{}"), 204);
  } finally {
    child.kill("SIGTERM");
    for await (const line of lines) printed.push(line);
    await child.stderr.cancel();
    await child.status;
  }
  const final = JSON.parse(printed.filter((line) => line.trim() !== "").pop()!);
  assertEquals(final.received, 1);
});
