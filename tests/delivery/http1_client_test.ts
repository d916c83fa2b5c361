/**
 * hookd's HTTP/1.1 delivery client: the response reader on crafted and random bytes, and the
 * client against a real `Deno.serve` receiver and raw TCP servers on loopback.
 */

import fc from "fast-check";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { Http1ResponseReader, type ResponseStep } from "../../src/delivery/http1_response.ts";
import { Http1Client } from "../../src/delivery/http1_client.ts";
import { HttpTransport, USER_AGENT } from "../../src/delivery/http_transport.ts";

const BOUNDS = { headBytesMax: 1_024, bodyBytesMax: 16, drainBytesMax: 64 };
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Feeds `text` in pieces cut at `cuts`, then the end of the connection if `eof`. */
function read(text: string | Uint8Array, cuts: number[] = [], eof = false): ResponseStep {
  const bytes = typeof text === "string" ? enc.encode(text) : text;
  const reader = new Http1ResponseReader(BOUNDS);
  const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  let from = 0;
  let step: ResponseStep = { kind: "more" };
  for (const to of [...points, bytes.length]) {
    step = reader.push(bytes.subarray(from, to));
    from = to;
    if (step.kind !== "more") return step;
  }
  return eof ? reader.end() : step;
}

function done(step: ResponseStep) {
  assert(step.kind === "done", `expected a response, got ${JSON.stringify(step)}`);
  return { ...step.response, text: dec.decode(step.response.body) };
}

Deno.test("Http1ResponseReader frames bodies by length, chunks and the connection's end", () => {
  const byLength = done(
    read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nRetry-After: 7\r\n\r\nhello"),
  );
  assertEquals([byLength.status, byLength.text, byLength.reusable], [200, "hello", true]);
  assertEquals(byLength.headers.get("retry-after"), "7");
  const chunked = done(
    read(
      "HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n" +
        "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n",
    ),
  );
  assertEquals([chunked.status, chunked.text, chunked.reusable], [500, "abcde", true]);
  // No framing: the body runs to the end of the connection, which is then not reusable.
  assertEquals(read("HTTP/1.1 200 OK\r\n\r\nto the end").kind, "more");
  const untilClose = done(read("HTTP/1.1 200 OK\r\n\r\nto the end", [], true));
  assertEquals([untilClose.text, untilClose.reusable], ["to the end", false]);
  // An interim 100 Continue is skipped; 204 has no body; Connection: close and HTTP/1.0 end it.
  assertEquals(
    done(read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")).status,
    204,
  );
  assertEquals(
    done(read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")).reusable,
    false,
  );
  assertEquals(done(read("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")).reusable, false);
});

Deno.test("Http1ResponseReader keeps the body's first bytes, drains a little more, cuts the rest", () => {
  const body = "x".repeat(40);
  const drained = done(read(`HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n${body}`));
  assertEquals([drained.text, drained.reusable], ["x".repeat(16), true]);
  // Past bodyBytesMax + drainBytesMax the answer ends there and the connection is not reused.
  const big = done(read(`HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n${"y".repeat(200)}`));
  assertEquals([big.text, big.reusable], ["y".repeat(16), false]);
});

Deno.test("Http1ResponseReader refuses malformed responses with a reason", () => {
  const problems = [
    "HTTP/2 200 OK\r\n\r\n",
    "HTTP/1.1 20 OK\r\n\r\n",
    "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
    `HTTP/1.1 200 OK\r\nX: ${"a".repeat(2_000)}\r\n\r\n`,
  ];
  for (const text of problems) assertEquals(read(text).kind, "error", text);
  // A connection closed before a whole response is an error, not an empty answer.
  assertEquals(read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe", [], true).kind, "error");
  assertEquals(new Http1ResponseReader(BOUNDS).end().kind, "error");
});

Deno.test("Http1ResponseReader: however the bytes are cut, the same answer; random bytes never throw", () => {
  const responses = [
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "HTTP/1.1 503 Busy\r\nRetry-After: 3\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwait\r\n0\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 410 Gone\r\nContent-Length: 4\r\n\r\ngone",
  ];
  fc.assert(
    fc.property(
      fc.constantFrom(...responses),
      fc.array(fc.nat({ max: 120 }), { maxLength: 12 }),
      (text, cuts) => {
        const whole = done(read(text));
        const cut = done(read(text, cuts));
        assertEquals([cut.status, cut.text, cut.reusable], [
          whole.status,
          whole.text,
          whole.reusable,
        ]);
      },
    ),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 300 }),
      fc.array(fc.nat({ max: 300 })),
      (bytes, cuts) => {
        const step = read(bytes, cuts, true);
        assert(["more", "done", "error"].includes(step.kind));
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("Http1Client posts to a Deno.serve receiver and reuses one connection", async () => {
  const seen: Array<{ host: string | null; sig: string | null; body: string }> = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    seen.push({
      host: r.headers.get("host"),
      sig: r.headers.get("webhook-id"),
      body: await r.text(),
    });
    return new Response(seen.length === 3 ? "slow down" : "ok", {
      status: seen.length === 3 ? 429 : 200,
      headers: seen.length === 3 ? { "retry-after": "2" } : {},
    });
  });
  const client = new Http1Client({ bodyBytesMax: 1_024 });
  try {
    for (let i = 0; i < 5; i++) {
      const response = await client.post({
        hostname: "127.0.0.1",
        port: server.addr.port,
        host: "receiver.example:8080",
        target: "/hook?x=1",
        headers: [["webhook-id", `msg_${i}`], ["Host", "evil.example"], ["content-length", "1"]],
        body: `{"n":${i}}`,
        signal: new AbortController().signal,
      });
      assertEquals(response.status, i === 2 ? 429 : 200);
      if (i === 2) assertEquals(response.headers.get("retry-after"), "2");
    }
    assertEquals(client.connectionsOpened, 1);
    assertEquals(seen.map((s) => s.body), [0, 1, 2, 3, 4].map((i) => `{"n":${i}}`));
    // The job's own Host and Content-Length are dropped: the client writes its own.
    assertEquals(seen.every((s) => s.host === "receiver.example:8080"), true);
    assertEquals(seen.map((s) => s.sig), [0, 1, 2, 3, 4].map((i) => `msg_${i}`));
  } finally {
    client.close();
    await server.shutdown();
  }
});

/** A raw TCP receiver: `answer(request number)` is what it writes back, then it may close. */
function rawServer(answer: (n: number) => { bytes: string; close: boolean } | null) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let requests = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      void (async () => {
        const buffer = new Uint8Array(4_096);
        try {
          for (;;) {
            const n = await conn.read(buffer);
            if (n === null) break;
            const reply = answer(++requests);
            if (reply === null) continue;
            if (reply.bytes !== "") await conn.write(enc.encode(reply.bytes));
            if (reply.close) break;
          }
        } catch {
          // Closed by the test.
        } finally {
          conns.delete(conn);
          try {
            conn.close();
          } catch {
            // Closed already.
          }
        }
      })();
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get requests() {
      return requests;
    },
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // Closed already.
        }
      }
      await serving.catch(() => {});
    },
  };
}

const post = (client: Http1Client, port: number, signal = new AbortController().signal) =>
  client.post({
    hostname: "127.0.0.1",
    port,
    host: `127.0.0.1:${port}`,
    target: "/",
    headers: [],
    body: "{}",
    signal,
  });

Deno.test("Http1Client sends again, fresh, only when a reused connection closed with no byte of an answer", async () => {
  // Request 2 finds the kept connection closing (the receiver's keep-alive timeout racing our
  // write): closed unanswered, so it goes again on a new connection, as fetch also does.
  const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  const racing = rawServer((n) =>
    n === 2 ? { bytes: "", close: true } : { bytes: ok, close: false }
  );
  // Request 2 is answered 103 Early Hints, then the connection closes: the receiver has it, so
  // it is an error of this attempt and is not sent a second time.
  const hinted = rawServer((n) =>
    n === 2
      ? { bytes: "HTTP/1.1 103 Early Hints\r\n\r\n", close: true }
      : { bytes: ok, close: false }
  );
  const client = new Http1Client({ bodyBytesMax: 64 });
  try {
    assertEquals((await post(client, racing.port)).status, 200);
    assertEquals((await post(client, racing.port)).status, 200);
    assertEquals([racing.requests, client.connectionsOpened], [3, 2]);
    assertEquals((await post(client, hinted.port)).status, 200);
    await assertRejects(() => post(client, hinted.port), Error, "connection closed");
    assertEquals(hinted.requests, 2);
  } finally {
    client.close();
    await racing.close();
    await hinted.close();
  }
});

Deno.test("Http1Client reports a garbled answer as an error, and an abort ends a silent exchange", async () => {
  const garbled = rawServer(() => ({ bytes: "SMTP ready\r\n\r\n", close: false }));
  const silent = rawServer(() => null);
  const client = new Http1Client({ bodyBytesMax: 64 });
  try {
    await assertRejects(() => post(client, garbled.port), Error, "malformed status line");
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(new Error("attempt timed out")), 100);
    await assertRejects(
      () => post(client, silent.port, controller.signal),
      Error,
      "attempt timed out",
    );
    assert(performance.now() - started < 5_000);
    // Nothing connects to a closed port: an error, not a hang.
    await assertRejects(() => post(client, 1, new AbortController().signal));
  } finally {
    client.close();
    await garbled.close();
    await silent.close();
  }
});

/**
 * A loopback listener whose accept queue is full (backlog 0, filled at once), so a further
 * connect hangs as it does to a host that drops SYNs. Python, as Deno's listen takes no backlog.
 */
async function blackhole(): Promise<{ port: number; stop: () => Promise<void> }> {
  const script = [
    "import socket, sys, time",
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(0)",
    "port = s.getsockname()[1]; fill = []",
    "for i in range(4):",
    "    c = socket.socket(); c.setblocking(False)",
    "    try: c.connect(('127.0.0.1', port))",
    "    except BlockingIOError: pass",
    "    fill.append(c)",
    "print(port, flush=True); time.sleep(30)",
  ].join("\n");
  const child = new Deno.Command("python3", { args: ["-c", script], stdout: "piped" }).spawn();
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  const port = Number(dec.decode(value).trim());
  return {
    port,
    stop: async () => {
      child.kill();
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}

Deno.test("Http1Client: an abort ends a connect that hangs (a receiver dropping SYNs)", async () => {
  const hole = await blackhole();
  const client = new Http1Client({ bodyBytesMax: 64 });
  try {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("attempt timed out")), 200);
    const started = performance.now();
    await assertRejects(
      () => post(client, hole.port, controller.signal),
      Error,
      "attempt timed out",
    );
    const tookMs = performance.now() - started;
    assert(tookMs < 2_000, `the abort took ${tookMs} ms`);
  } finally {
    client.close();
    await hole.stop();
  }
});

Deno.test("Http1Client never takes bytes sent while idle for the next answer, and closes idle ones", async () => {
  // Each connection: the first request is answered 500; 30 ms later a stray 200 follows on it
  // unasked (a doubled answer); a request on a fresh connection is answered 500 again.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      void (async () => {
        const buffer = new Uint8Array(4_096);
        try {
          while ((await conn.read(buffer)) !== null) {
            await conn.write(enc.encode("HTTP/1.1 500 Fail\r\nContent-Length: 4\r\n\r\nfail"));
            await new Promise((r) => setTimeout(r, 30));
            await conn.write(enc.encode("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale"));
          }
        } catch {
          // Closed by the client or the test.
        }
      })();
    }
  })();
  const port = (listener.addr as Deno.NetAddr).port;
  const client = new Http1Client({ bodyBytesMax: 64, idleMs: 200 });
  try {
    assertEquals((await post(client, port)).status, 500);
    assertEquals(client.idleConnections, 1);
    await new Promise((r) => setTimeout(r, 100));
    // The stray 200 retired the idle connection; the next POST gets its own answer.
    assertEquals(client.idleConnections, 0);
    const second = await post(client, port);
    assertEquals([second.status, dec.decode(second.body)], [500, "fail"]);
    assertEquals(client.connectionsOpened, 2);
  } finally {
    client.close();
    listener.close();
    for (const c of conns) {
      try {
        c.close();
      } catch {
        // Closed already.
      }
    }
    await serving.catch(() => {});
  }
  // Idle past idleMs: the sweep closes it without another request to that target.
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("ok"),
  );
  const quiet = new Http1Client({ bodyBytesMax: 64, idleMs: 100 });
  try {
    assertEquals((await post(quiet, server.addr.port)).status, 200);
    assertEquals(quiet.idleConnections, 1);
    await new Promise((r) => setTimeout(r, 400));
    assertEquals(quiet.idleConnections, 0);
  } finally {
    quiet.close();
    await server.shutdown();
  }
});

Deno.test("HttpTransport sends plain HTTP through its client whatever the scheme's case, with a User-Agent", async () => {
  const seen: Array<{ agent: string | null; name: string | null; path: string }> = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (r) => {
    await r.arrayBuffer();
    seen.push({
      agent: r.headers.get("user-agent"),
      name: r.headers.get("x-name"),
      path: new URL(r.url).pathname,
    });
    return new Response(null, { status: 204 });
  });
  const transport = new HttpTransport({ allowPrivateTargets: true, responseBodyBytesMax: 64 });
  try {
    for (
      const url of [
        `HTTP://127.0.0.1:${server.addr.port}/a`,
        `http://127.0.0.1:${server.addr.port}/b`,
      ]
    ) {
      const result = await transport.send({
        // A Latin-1 header value goes out as the one byte fetch also writes.
        job: { id: "msg_1", url, payload: "{}", secrets: [], headers: { "x-name": "Jos\u00e9" } },
        attempt: 1,
        timeoutMs: 5_000,
      });
      assertEquals(result.kind === "response" ? result.status : result, 204);
    }
    assertEquals(seen, [
      { agent: USER_AGENT, name: "Jos\u00e9", path: "/a" },
      { agent: USER_AGENT, name: "Jos\u00e9", path: "/b" },
    ]);
  } finally {
    transport.close();
    await server.shutdown();
  }
});
