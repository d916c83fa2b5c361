/**
 * DNS rebinding: the connection goes to the address the SSRF guard checked, never to a second
 * lookup of the name. Targets are names that cannot resolve (`.invalid`, `.test`), so a fetch
 * that looked the name up again would fail; the test's resolver answers with a public address
 * and the transport's `dial` seam lands connections to that address on a loopback server.
 * Also: the CONNECT relay refuses strangers and unpinned targets, and parses hostile heads
 * without throwing.
 */

import fc from "fast-check";
import { assert, assertEquals } from "../assert.ts";
import { HttpTransport } from "../../src/delivery/http_transport.ts";
import { parseConnect, PinnedRelay } from "../../src/delivery/pinned_relay.ts";
import type { DeliveryJob } from "../../src/delivery/types.ts";

const PUBLIC = "93.184.216.34";

interface Recorded {
  host: string | null;
  path: string;
}

function startServer(tls?: { cert: string; key: string }) {
  const seen: Recorded[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, ...(tls ?? {}) },
    async (request) => {
      await request.arrayBuffer();
      seen.push({ host: request.headers.get("host"), path: new URL(request.url).pathname });
      return new Response(null, { status: 204 });
    },
  );
  return { port: server.addr.port, seen, close: () => server.shutdown() };
}

function job(url: string): DeliveryJob {
  return { id: "job_rebind", url, payload: "{}", secrets: [] };
}

Deno.test("HttpTransport connects plain HTTP to the checked address; a rebound answer is refused, never dialled", async () => {
  const server = startServer();
  const answers = [[PUBLIC], ["127.0.0.1"]];
  const dialled: string[] = [];
  const transport = new HttpTransport({
    allowPrivateTargets: false,
    responseBodyBytesMax: 1024,
    dnsCacheMs: 0,
    resolve: () => Promise.resolve(answers.shift() ?? ["127.0.0.1"]),
    dial: (address, port) => {
      dialled.push(`${address}:${port}`);
      return address === PUBLIC
        ? { hostname: "127.0.0.1", port: server.port }
        : { hostname: address, port };
    },
  });
  try {
    const url = `http://rebind.invalid:${server.port}/hook`;
    const first = await transport.send({ job: job(url), attempt: 1, timeoutMs: 5_000 });
    assertEquals(first.kind === "response" ? first.status : first, 204);
    // The receiver saw the URL's own name; the connection went to the checked address.
    assertEquals(server.seen, [{ host: `rebind.invalid:${server.port}`, path: "/hook" }]);
    assertEquals(dialled, [`${PUBLIC}:${server.port}`]);
    // The name now resolves to loopback (the rebinding): refused before any connection.
    const second = await transport.send({ job: job(url), attempt: 2, timeoutMs: 5_000 });
    assertEquals(second.kind, "refused");
    assertEquals(dialled.length, 1);
    assertEquals(server.seen.length, 1);
  } finally {
    transport.close();
    await server.close();
  }
});

/** A private CA and a leaf for `rebind.test`, made with openssl in a temp dir. */
async function testCertificates(): Promise<{ ca: string; cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "hookd-rebind-tls-" });
  const run = async (...args: string[]) => {
    const { success, stderr } = await new Deno.Command("openssl", { args, stderr: "piped" })
      .output();
    assert(success, `openssl ${args[0]}: ${new TextDecoder().decode(stderr)}`);
  };
  try {
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    await run(
      "req",
      "-x509",
      ...ec,
      "-keyout",
      `${dir}/ca.key`,
      "-out",
      `${dir}/ca.pem`,
      "-days",
      "1",
      "-subj",
      "/CN=hookd test CA",
    );
    await run(
      "req",
      ...ec,
      "-keyout",
      `${dir}/leaf.key`,
      "-out",
      `${dir}/leaf.csr`,
      "-subj",
      "/CN=rebind.test",
    );
    await Deno.writeTextFile(
      `${dir}/ext.cnf`,
      "subjectAltName=DNS:rebind.test\nbasicConstraints=CA:FALSE\n",
    );
    await run(
      "x509",
      "-req",
      "-in",
      `${dir}/leaf.csr`,
      "-CA",
      `${dir}/ca.pem`,
      "-CAkey",
      `${dir}/ca.key`,
      "-CAcreateserial",
      "-out",
      `${dir}/leaf.pem`,
      "-days",
      "1",
      "-extfile",
      `${dir}/ext.cnf`,
    );
    return {
      ca: await Deno.readTextFile(`${dir}/ca.pem`),
      cert: await Deno.readTextFile(`${dir}/leaf.pem`),
      key: await Deno.readTextFile(`${dir}/leaf.key`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("HttpTransport tunnels HTTPS to the checked address with TLS for the URL's name", async () => {
  const { ca, cert, key } = await testCertificates();
  const server = startServer({ cert, key });
  const dialled: string[] = [];
  const transport = new HttpTransport({
    allowPrivateTargets: false,
    responseBodyBytesMax: 1024,
    caCerts: [ca],
    resolve: () => Promise.resolve([PUBLIC]),
    dial: (address, port) => {
      dialled.push(`${address}:${port}`);
      return { hostname: "127.0.0.1", port: server.port };
    },
  });
  try {
    const ok = await transport.send({
      job: job(`https://rebind.test:${server.port}/secure`),
      attempt: 1,
      timeoutMs: 10_000,
    });
    assertEquals(ok.kind === "response" ? ok.status : ok, 204);
    assertEquals(server.seen.map((r) => r.path), ["/secure"]);
    assertEquals(dialled, [`${PUBLIC}:${server.port}`]);
    // TLS really checks the URL's name against the certificate, through the tunnel.
    const wrongName = await transport.send({
      job: job(`https://other.test:${server.port}/secure`),
      attempt: 1,
      timeoutMs: 10_000,
    });
    assertEquals(wrongName.kind, "network_error");
    assertEquals(server.seen.length, 1);
  } finally {
    transport.close();
    await server.close();
  }
});

async function rawConnect(port: number, head: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(head));
    const buffer = new Uint8Array(256);
    const n = await conn.read(buffer);
    return n === null ? "" : new TextDecoder().decode(buffer.subarray(0, n)).split("\r\n")[0]!;
  } finally {
    conn.close();
  }
}

Deno.test("PinnedRelay refuses a CONNECT without its secret, to an unpinned target, or malformed", async () => {
  const relay = new PinnedRelay({
    pinned: (host, port) => host === "pinned.test" ? { hostname: "127.0.0.1", port } : undefined,
  });
  try {
    const proxy = relay.proxy() as { url: string; basicAuth: { password: string } };
    const port = Number(new URL(proxy.url).port);
    const good = `Proxy-Authorization: Basic ${btoa(`hookd:${proxy.basicAuth.password}`)}\r\n`;
    assertEquals(
      await rawConnect(port, "CONNECT pinned.test:1 HTTP/1.1\r\n\r\n"),
      "HTTP/1.1 407 Proxy Authentication Required",
    );
    assertEquals(
      await rawConnect(
        port,
        `CONNECT pinned.test:1 HTTP/1.1\r\nProxy-Authorization: Basic ${
          btoa("hookd:nope")
        }\r\n\r\n`,
      ),
      "HTTP/1.1 407 Proxy Authentication Required",
    );
    assertEquals(
      await rawConnect(port, `CONNECT 10.0.0.1:443 HTTP/1.1\r\n${good}\r\n`),
      "HTTP/1.1 403 Forbidden",
    );
    assertEquals(
      await rawConnect(port, `GET / HTTP/1.1\r\n${good}\r\n`),
      "HTTP/1.1 400 Bad Request",
    );
    assert(relay.refused >= 4);
  } finally {
    await relay.close();
  }
});

Deno.test("parseConnect reads host, port and credentials and never throws on hostile heads", () => {
  assertEquals(parseConnect("CONNECT Example.TEST:8443 HTTP/1.1\r\nProxy-Authorization: Basic x"), {
    host: "example.test",
    port: 8443,
    authorization: "Basic x",
  });
  assertEquals(parseConnect("CONNECT example.test HTTP/1.1")?.port, 443);
  assertEquals(parseConnect("CONNECT [2001:db8::1]:443 HTTP/1.1")?.host, "2001:db8::1");
  for (
    const bad of [
      "",
      "CONNECT :1 HTTP/1.1",
      "CONNECT a:0 HTTP/1.1",
      "CONNECT a:99999 HTTP/1.1",
      "POST / HTTP/1.1",
    ]
  ) {
    assertEquals(parseConnect(bad), undefined, bad);
  }
  fc.assert(
    fc.property(fc.string({ maxLength: 300 }), (head) => {
      const parsed = parseConnect(head);
      return parsed === undefined || (parsed.port > 0 && parsed.port <= 65_535);
    }),
    { numRuns: 2_000 },
  );
});
