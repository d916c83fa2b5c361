/**
 * The API on real sockets (127.0.0.1 only): HTTPS with a certificate generated at test time,
 * auth, admission control and slow or oversized clients against a live Deno.serve.
 */

import { assert, assertEquals, assertRejects } from "../assert.ts";
import { type ApiConfig, apiDefaults } from "../../src/config/api.ts";
import { type ApiServer, loadTlsFiles, serveApi } from "../../src/api/server.ts";
import { MetricsRegistry } from "../../src/metrics/registry.ts";
import { FakeJobService } from "./fake_service.ts";
import { TOKEN, VALID_JOB } from "./harness.ts";

function start(
  options: { config?: Partial<ApiConfig>; apiToken?: string; tls?: { cert: string; key: string } } =
    {},
): { server: ApiServer; service: FakeJobService } {
  const service = new FakeJobService();
  const registry = new MetricsRegistry();
  const server = serveApi({
    hostname: "127.0.0.1",
    port: 0,
    service,
    registry,
    metrics: () => registry.renderPrometheus(),
    config: { ...apiDefaults, ...options.config },
    log: () => {},
    ...(options.apiToken !== undefined ? { apiToken: options.apiToken } : {}),
    ...(options.tls !== undefined ? { tls: options.tls } : {}),
  });
  return { server, service };
}

const submit = (base: string, headers: Record<string, string> = {}, client?: Deno.HttpClient) =>
  fetch(`${base}/v1/jobs`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(VALID_JOB),
    ...(client !== undefined ? { client } : {}),
  });

/** A self-signed certificate for 127.0.0.1, made with openssl in a temp dir (removed after). */
async function selfSignedCert(): Promise<{ certPath: string; keyPath: string; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "hookd-api-tls-" });
  const certPath = `${dir}/cert.pem`;
  const keyPath = `${dir}/key.pem`;
  const { success, stderr } = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      keyPath,
      "-out",
      certPath,
      "-days",
      "1",
      "-subj",
      "/CN=hookd-test",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      // rustls refuses a CA certificate as the server's own (CaUsedAsEndEntity).
      "-addext",
      "basicConstraints=critical,CA:FALSE",
      "-addext",
      "extendedKeyUsage=serverAuth",
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert(success, `openssl failed: ${new TextDecoder().decode(stderr)}`);
  return { certPath, keyPath, dir };
}

Deno.test("serveApi over HTTPS: a client trusting the test certificate submits; plain HTTP and untrusting clients fail", async () => {
  const { certPath, keyPath, dir } = await selfSignedCert();
  const tls = await loadTlsFiles(certPath, keyPath);
  const { server, service } = start({ tls });
  const client = Deno.createHttpClient({ caCerts: [tls.cert] });
  try {
    assert(server.url.startsWith("https://127.0.0.1:"), server.url);
    const accepted = await submit(server.url, {}, client);
    assertEquals(accepted.status, 202);
    assertEquals((await accepted.json()).id, "job-1");
    const health = await fetch(`${server.url}/healthz`, { client });
    assertEquals(health.status, 200);
    await health.body?.cancel();
    assertEquals(service.submitted.length, 1);

    await assertRejects(() => fetch(`${server.url}/healthz`)); // untrusted certificate
    const plain = `http://127.0.0.1:${server.port}/healthz`;
    await assertRejects(async () => {
      const response = await fetch(plain);
      await response.body?.cancel();
    });
  } finally {
    client.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadTlsFiles names the flag and path it cannot read", async () => {
  const error = await assertRejects(() =>
    loadTlsFiles("/nonexistent/cert.pem", "/nonexistent/key.pem")
  );
  assert(error.message.startsWith("--tls-cert /nonexistent/cert.pem"), error.message);
});

Deno.test("loadTlsFiles names the flag whose file is not a PEM certificate or key (swapped, or junk)", async () => {
  const { certPath: cert, keyPath: key, dir } = await selfSignedCert();
  try {
    const junk = `${dir}/junk.pem`;
    await Deno.writeTextFile(junk, "not a certificate\n");
    for (
      const [certPath, keyPath, flag] of [
        [junk, key, "--tls-cert"],
        [cert, junk, "--tls-key"],
        [key, cert, "--tls-cert"],
      ] as const
    ) {
      const error = await assertRejects(() => loadTlsFiles(certPath, keyPath));
      assert(error.message.startsWith(`${flag} `), error.message);
    }
    const both = await loadTlsFiles(cert, key);
    assert(both.cert.includes("CERTIFICATE") && both.key.includes("PRIVATE KEY"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serveApi with a token: /v1/ needs the bearer token over the wire; /healthz does not", async () => {
  const { server } = start({ apiToken: TOKEN });
  try {
    const denied = await submit(server.url);
    assertEquals(denied.status, 401);
    assertEquals(denied.headers.get("www-authenticate"), "Bearer");
    await denied.body?.cancel();
    const allowed = await submit(server.url, { authorization: `Bearer ${TOKEN}` });
    assertEquals(allowed.status, 202);
    await allowed.body?.cancel();
    const health = await fetch(`${server.url}/healthz`);
    assertEquals(health.status, 200);
    await health.body?.cancel();
  } finally {
    await server.shutdown();
  }
});

Deno.test("serveApi: the (cap+1)-th submit to a stuck store gets 503 + Retry-After while /healthz answers", async () => {
  const cap = 4;
  const { server, service } = start({ config: { submitsInFlightMax: cap } });
  service.mode = { kind: "hang" };
  try {
    const parked = Array.from({ length: cap }, () => submit(server.url));
    for (let i = 0; i < 500 && service.parked < cap; i++) {
      await new Promise((r) => setTimeout(r, 2));
    }
    assertEquals(service.parked, cap);

    const refused = await submit(server.url);
    assertEquals(refused.status, 503);
    assertEquals(refused.headers.get("retry-after"), "1");
    assertEquals((await refused.json()).error.code, "overloaded");
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const response = await fetch(`${server.url}${path}`);
      assertEquals(response.status, 200, path);
      await response.body?.cancel();
    }
    service.release();
    for (const response of await Promise.all(parked)) {
      assertEquals(response.status, 202);
      await response.body?.cancel();
    }
  } finally {
    service.release();
    await server.shutdown();
  }
});

/** Opens a raw TCP connection and writes `text` to it. */
async function rawConnection(port: number, text: string): Promise<Deno.TcpConn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(text));
  return conn;
}

/** Reads from `conn` until it closes or `bytesMax` bytes arrive; the text read. */
async function readSome(conn: Deno.TcpConn, bytesMax = 4096): Promise<string> {
  const buffer = new Uint8Array(bytesMax);
  let total = 0;
  for (let i = 0; i < 64 && total < bytesMax; i++) {
    const n = await conn.read(buffer.subarray(total));
    if (n === null) break;
    total += n;
    const text = new TextDecoder().decode(buffer.subarray(0, total));
    const head = text.indexOf("\r\n\r\n");
    const length = /content-length: (\d+)/i.exec(text);
    if (head >= 0 && length !== null && total >= head + 4 + Number(length[1])) break;
  }
  return new TextDecoder().decode(buffer.subarray(0, total));
}

Deno.test("serveApi: clients stuck mid-headers or mid-body do not stop /healthz; a trickled body gets 408", async () => {
  const { server } = start({ config: { bodyReadTimeoutMs: 300 } });
  const conns: Deno.TcpConn[] = [];
  try {
    // Slowloris: 100 connections that never finish their headers.
    for (let i = 0; i < 100; i++) {
      conns.push(await rawConnection(server.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "));
    }
    // A body that never completes: the handler gives up after bodyReadTimeoutMs.
    const trickle = await rawConnection(
      server.port,
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        'Content-Length: 1000\r\n\r\n{"url":',
    );
    conns.push(trickle);
    const health = await fetch(`${server.url}/healthz`);
    assertEquals(health.status, 200);
    await health.body?.cancel();

    const answer = await readSome(trickle);
    assert(answer.startsWith("HTTP/1.1 408"), answer.slice(0, 200));
    assert(answer.includes('"body_timeout"'), answer);
  } finally {
    for (const conn of conns) {
      try {
        conn.close();
      } catch { /* already closed by the server */ }
    }
    await server.shutdown();
  }
});

Deno.test("serveApi: huge request headers are refused before the handler, and the node keeps answering", async () => {
  const { server, service } = start();
  try {
    const huge = await submit(server.url, { "x-huge": "a".repeat(512 * 1024) }).catch((e) => e);
    if (huge instanceof Response) {
      // Deno 2.9.6 answers 400 past its header limit (measured: 64 KiB passes, 200 KiB does not).
      assert(huge.status >= 400 && huge.status < 500, `status ${huge.status}`);
      await huge.body?.cancel();
    }
    assertEquals(service.submitted.length, 0);
    const health = await fetch(`${server.url}/healthz`);
    assertEquals(health.status, 200);
    await health.body?.cancel();
  } finally {
    await server.shutdown();
  }
});

Deno.test("serveApi: a body declared over bodyBytesMax is refused 413 over the wire without reading it", async () => {
  const { server, service } = start({ config: { bodyBytesMax: 1024 } });
  const conn = await rawConnection(
    server.port,
    "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
      "Content-Length: 1000000000\r\n\r\n",
  );
  try {
    const answer = await readSome(conn);
    assert(answer.startsWith("HTTP/1.1 413"), answer.slice(0, 200));
    assertEquals(service.submitted.length, 0);
  } finally {
    conn.close();
    await server.shutdown();
  }
});
