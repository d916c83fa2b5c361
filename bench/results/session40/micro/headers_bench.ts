import { webhookHeaders } from "../../../../src/delivery/signing.ts";
const job = { id: "job_0123456789abcdef0123456789abcdef", payload: JSON.stringify({ bench: "x".repeat(116) }), secrets: [] as string[], submittedAtMs: Date.now(), url: "http://127.0.0.1:8080/hook" };
const CONNECTION = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade"]);
/** The head's last line and the body, as http1_client.ts's encodeRequest writes them. */
function withBody(head: string): Uint8Array {
  const body = new TextEncoder().encode(job.payload);
  head += `content-length: ${body.length}\r\n\r\n`;
  const out = new Uint8Array(head.length + body.length);
  for (let i = 0; i < head.length; i++) out[i] = head.charCodeAt(i) & 0xff;
  out.set(body, head.length);
  return out;
}
function viaHeaders(): Uint8Array {
  const headers = new Headers({ "content-type": "application/json", "user-agent": "hookd/1" });
  const signed = webhookHeaders(job.secrets, job.id, 1_800_000_000, job.payload);
  for (const [name, value] of Object.entries(signed)) headers.set(name, value);
  headers.set("hookd-submitted-at", String(job.submittedAtMs));
  let head = `POST /hook HTTP/1.1\r\nhost: 127.0.0.1:8080\r\n`;
  for (const [name, value] of headers) {
    if (CONNECTION.has(name.toLowerCase())) continue;
    head += `${name}: ${value}\r\n`;
  }
  return withBody(head);
}
function viaPairs(): Uint8Array {
  const signed = webhookHeaders(job.secrets, job.id, 1_800_000_000, job.payload);
  let head = `POST /hook HTTP/1.1\r\nhost: 127.0.0.1:8080\r\ncontent-type: application/json\r\nuser-agent: hookd/1\r\n`;
  for (const name in signed) head += `${name}: ${signed[name]}\r\n`;
  head += `hookd-submitted-at: ${job.submittedAtMs}\r\n`;
  return withBody(head);
}
function url(): URL { return new URL(job.url); }
Deno.bench("request via Headers", () => { viaHeaders(); });
Deno.bench("request via plain pairs", () => { viaPairs(); });
Deno.bench("new URL", () => { url(); });
