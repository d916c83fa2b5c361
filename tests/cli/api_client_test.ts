import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  type ApiAnswer,
  ApiClient,
  apiErrorOf,
  describeAnswer,
  isUnavailable,
  parseNodeUrl,
  shellQuote,
} from "../../src/cli/api_client.ts";
import { UsageError } from "../../src/process/args.ts";

Deno.test("parseNodeUrl takes a base URL or a bare host:port, and refuses what is not one", () => {
  assertEquals(parseNodeUrl("submit", "127.0.0.1:8080"), "http://127.0.0.1:8080");
  assertEquals(parseNodeUrl("submit", "https://hookd.example/"), "https://hookd.example");
  assertEquals(parseNodeUrl("submit", "http://h:1/prefix//"), "http://h:1/prefix");
  for (const bad of ["ftp://h/", "http://", "http://h:1/?q=1", "http://[::1"]) {
    assertThrows(() => parseNodeUrl("submit", bad), UsageError);
  }
});

Deno.test("shellQuote makes words a POSIX shell gives back unchanged", async () => {
  const words = [
    "plain",
    "whsec_ab+c/d=",
    '{"hello":"hookd"}',
    "it's",
    "",
    "$HOME `x` \\ \n!",
    "http://127.0.0.1:1/hook,http://127.0.0.1:2",
  ];
  const script = words.map((w) => `printf '%s\\0' ${shellQuote(w)}`).join("; ");
  const output = await new Deno.Command("sh", { args: ["-c", script], stdout: "piped" }).output();
  assert(output.success);
  assertEquals(new TextDecoder().decode(output.stdout).split("\0").slice(0, -1), words);
  assertEquals(shellQuote("plain"), "plain");
});

Deno.test("describeAnswer says in one line what a node answered; 503 and no answer mean try the next", () => {
  const answered = (status: number, body: unknown): ApiAnswer => ({
    kind: "answered",
    node: "http://n1",
    status,
    headers: new Headers(),
    text: JSON.stringify(body),
    json: body,
  });
  const overloaded = answered(503, {
    error: { code: "overloaded", message: "full", retryAfterS: 1 },
  });
  assertEquals(describeAnswer(overloaded), "http://n1: 503 overloaded: full (retry after 1 s)");
  assert(isUnavailable(overloaded));
  const invalid = answered(400, { error: { code: "invalid", message: "bad", field: "url" } });
  assertEquals(describeAnswer(invalid), "http://n1: 400 invalid (field url): bad");
  assertEquals(apiErrorOf(invalid)?.field, "url");
  assert(!isUnavailable(invalid));
  const html: ApiAnswer = {
    kind: "answered",
    node: "http://n1",
    status: 502,
    headers: new Headers(),
    text: "<html>\n bad gateway</html>",
    json: undefined,
  };
  assertEquals(describeAnswer(html), "http://n1: HTTP 502: <html> bad gateway</html>");
  const gone: ApiAnswer = { kind: "unreachable", node: "http://n2", reason: "connection refused" };
  assertEquals(describeAnswer(gone), "http://n2: connection refused");
  assert(isUnavailable(gone));
});

Deno.test("ApiClient bounds the response it reads and says why a node is unreachable", async () => {
  const big = "x".repeat(4096);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) =>
      new URL(request.url).pathname === "/big"
        ? new Response(big)
        : Response.json({ auth: request.headers.get("authorization") }),
  );
  try {
    const node = `http://127.0.0.1:${server.addr.port}`;
    const client = new ApiClient({ nodes: [node], apiToken: "t0k3n", responseBytesMax: 1024 });
    const small = await client.request(node, "GET", "/small");
    assert(small.kind === "answered");
    assertEquals(small.json, { auth: "Bearer t0k3n" });
    const tooBig = await client.request(node, "GET", "/big");
    assertEquals(tooBig.kind, "unreachable");
    assert(tooBig.kind === "unreachable" && tooBig.reason.includes("1024 bytes"));
  } finally {
    await server.shutdown();
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = listener.addr.port;
  listener.close();
  const closed = `http://127.0.0.1:${closedPort}`;
  const answer = await new ApiClient({ nodes: [closed] }).request(closed, "GET", "/healthz");
  assertEquals(answer, { kind: "unreachable", node: closed, reason: "connection refused" });
});
