// The client's CPU for one keep-alive POST to a Deno.serve receiver in another process (issue 19, session 20):
// `fetch` against the same request written and read by hand on one Deno.Conn, as src/delivery/http1_client.ts does.
// `deno run -A bench/results/cost/http_client_floor.ts [N]`; CPU from /proc/self/stat (10-ms ticks) over N requests.
// Client-side CPU of a keep-alive POST: fetch vs a raw HTTP/1.1 write/read on one TCP connection.
if (Deno.args[0] === "serve") {
  Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(port) }, async (req) => {
    await req.arrayBuffer();
    return new Response("ok", { status: 200 });
  });
  await new Promise(() => {});
}
const N = Number(Deno.args[0] ?? 3000);
const server = new Deno.Command(Deno.execPath(), { args: ["run", "-A", import.meta.filename!, "serve"], stdout: "piped" }).spawn();
const reader = server.stdout.getReader();
const { value } = await reader.read();
const port = Number(new TextDecoder().decode(value).trim());
const cpu = () => { const f = Deno.readTextFileSync("/proc/self/stat").split(") ")[1]!.split(" "); return (Number(f[11]) + Number(f[12])) * 10; };
const body = JSON.stringify({ hello: "world", n: 1, pad: "x".repeat(200) });
async function viaFetch(n: number) {
  for (let i = 0; i < n; i++) {
    const r = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body, headers: { "content-type": "application/json", "webhook-id": "msg_1", "webhook-timestamp": "123", "webhook-signature": "v1,abc" } });
    await r.arrayBuffer();
  }
}
const enc = new TextEncoder();
const buf = new Uint8Array(16384);
async function viaRaw(n: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  conn.setNoDelay(true);
  for (let i = 0; i < n; i++) {
    const req = `POST / HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\nwebhook-id: msg_1\r\nwebhook-timestamp: 123\r\nwebhook-signature: v1,abc\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    await conn.write(enc.encode(req));
    let got = "";
    for (;;) {
      const k = await conn.read(buf);
      if (k === null) throw new Error("eof");
      got += new TextDecoder().decode(buf.subarray(0, k));
      const he = got.indexOf("\r\n\r\n");
      if (he >= 0) {
        const m = /content-length: (\d+)/i.exec(got.slice(0, he));
        const len = m ? Number(m[1]) : 0;
        if (got.length >= he + 4 + len) break;
      }
    }
  }
  conn.close();
}
for (const [name, f] of [["fetch", viaFetch], ["raw", viaRaw], ["fetch", viaFetch], ["raw", viaRaw]] as const) {
  await f(300);
  const c0 = cpu(); const t0 = performance.now();
  await f(N);
  console.log(`${name}: ${((cpu() - c0) * 1000 / N).toFixed(1)} µs CPU/request (client), ${((performance.now() - t0) * 1000 / N).toFixed(1)} µs wall`);
}
server.kill(); await server.status;
