import { deepStrictEqual, equal, notDeepStrictEqual, ok } from "node:assert/strict";
import fc from "fast-check";
import { Sfc32 } from "../../src/lib/rng.ts";
import {
  AEAD_TAG_BYTES,
  ClusterKeyring,
  KEY_GENERATION_DATAGRAMS,
  keyGeneration,
  openDatagram,
  sealDatagram,
} from "../../src/transport/datagram_crypto.ts";
import {
  decodeDatagram,
  encodeDatagram,
  OUTER_HEADER_BYTES,
  readOuterHeader,
} from "../../src/transport/frame_codec.ts";
import { Endpoint } from "../../src/transport/mod.ts";

const KEY = "datagram-crypto-test-key-0123456789";
const keyring = new ClusterKeyring(KEY);
const KEY_ID = Uint8Array.from({ length: 16 }, (_, i) => i * 7);
const SECRET = new TextEncoder().encode("whsec_the-signing-secret-of-a-job");

function datagram(counter: number): Uint8Array {
  return encodeDatagram(
    { keyId: KEY_ID, counter, nodeId: "n1", epoch: 5, dstEpoch: 9, packetNumber: 3 },
    [{ type: "message", channel: 1, msgId: 0, bytes: SECRET }],
    AEAD_TAG_BYTES,
    (d) => sealDatagram(keyring.derive(KEY_ID, keyGeneration(counter)), d),
  );
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

Deno.test("a sealed datagram hides its payload and opens back to it under the same key only", () => {
  const sealed = datagram(42);
  equal(contains(sealed, SECRET), false, "the payload is not readable on the wire");
  const opened = openDatagram(keyring.derive(KEY_ID, 0), sealed);
  ok(opened !== undefined);
  const decoded = decodeDatagram(opened, 0);
  ok(decoded.ok);
  equal(decoded.value.counter, 42);
  const frame = decoded.value.frames[0];
  ok(frame?.type === "message");
  deepStrictEqual([...frame.bytes], [...SECRET]);
  const other = new ClusterKeyring("another-cluster-key-0123456789");
  equal(openDatagram(other.derive(KEY_ID, 0), sealed), undefined, "another cluster's key");
  const otherId = KEY_ID.slice();
  otherId[0]! ^= 1;
  equal(openDatagram(keyring.derive(otherId, 0), sealed), undefined, "another sender's key");
});

Deno.test("a sealed datagram with any byte changed, the clear header included, does not open", () => {
  const sealed = datagram(7);
  const key = keyring.derive(KEY_ID, 0);
  for (let at = 0; at < sealed.length; at++) {
    const changed = sealed.slice();
    changed[at]! ^= 0x10;
    equal(openDatagram(key, changed), undefined, `byte ${at} changed`);
  }
});

Deno.test("openDatagram never throws on arbitrary bytes", () => {
  const key = keyring.derive(KEY_ID, 0);
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      equal(openDatagram(key, bytes), undefined);
      const outer = readOuterHeader(bytes, AEAD_TAG_BYTES);
      ok(typeof outer.ok === "boolean");
    }),
    { numRuns: 2000 },
  );
});

Deno.test("the same payload sealed under two counters gives two ciphertexts; generations change the key", () => {
  const a = datagram(1);
  const b = datagram(2);
  notDeepStrictEqual(
    [...a.subarray(OUTER_HEADER_BYTES)],
    [...b.subarray(OUTER_HEADER_BYTES)],
  );
  equal(keyGeneration(KEY_GENERATION_DATAGRAMS - 1), 0);
  equal(keyGeneration(KEY_GENERATION_DATAGRAMS), 1);
  notDeepStrictEqual([...keyring.derive(KEY_ID, 0)], [...keyring.derive(KEY_ID, 1)]);
  const late = datagram(KEY_GENERATION_DATAGRAMS + 5);
  equal(openDatagram(keyring.derive(KEY_ID, 0), late), undefined);
  ok(openDatagram(keyring.derive(KEY_ID, 1), late) !== undefined);
});

Deno.test("an endpoint never repeats a nonce: one counter across all its peers, and a new key id per endpoint", () => {
  const make = () => new Endpoint({ nodeId: "a", clusterKey: KEY, rng: new Sfc32(1), epoch: 1 });
  const a = make();
  const seen = new Set<number>();
  let last = -1;
  for (let round = 0; round < 20; round++) {
    for (const peer of ["10.0.0.2:1", "10.0.0.3:1", "10.0.0.4:1"]) {
      a.send(round, peer, 1, new Uint8Array(2000));
      a.sendUnreliable(round, peer, 2, new Uint8Array(10));
    }
    a.tick(round);
    for (const d of a.takeDatagrams()) {
      const outer = readOuterHeader(d.bytes, AEAD_TAG_BYTES);
      ok(outer.ok);
      ok(!seen.has(outer.value.counter), `counter ${outer.value.counter} twice`);
      ok(outer.value.counter > last, "counters rise in send order");
      seen.add(outer.value.counter);
      last = outer.value.counter;
    }
  }
  ok(seen.size > 60);
  // Two incarnations with the same seed and epoch still seal under different key ids.
  const b = make();
  a.sendUnreliable(100, "10.0.0.2:1", 1, new Uint8Array(1));
  b.sendUnreliable(100, "10.0.0.2:1", 1, new Uint8Array(1));
  a.tick(100);
  b.tick(100);
  const idOf = (e: Endpoint) => {
    const outer = readOuterHeader(e.takeDatagrams()[0]!.bytes, AEAD_TAG_BYTES);
    ok(outer.ok);
    return [...outer.value.keyId];
  };
  notDeepStrictEqual(idOf(a), idOf(b));
});

Deno.test("an endpoint derives keys for unknown key ids at a bounded rate, whatever arrives", () => {
  const b = new Endpoint({
    nodeId: "b",
    clusterKey: KEY,
    rng: new Sfc32(2),
    config: { keyDerivationsPerSecondMax: 50 },
  });
  const rng = new Sfc32(3);
  // 5,000 well-formed datagrams under random key ids, in one second.
  for (let i = 0; i < 5000; i++) {
    const keyId = Uint8Array.from({ length: 16 }, () => rng.int(256));
    const junk = encodeDatagram(
      { keyId, counter: i, nodeId: "x", epoch: 1, dstEpoch: 0, packetNumber: 1 },
      [{ type: "unreliable", channel: 1, bytes: new Uint8Array(8) }],
      AEAD_TAG_BYTES,
    );
    b.receive(i / 5, "10.9.9.9:1", junk);
  }
  const s = b.metrics.snapshot();
  const tried = s["hookd_transport_auth_failures_total"] as number;
  const refused = s["hookd_transport_key_derivations_refused_total"] as number;
  ok(tried <= 50 + 50 + 1, `${tried} keys derived in one second`);
  equal(tried + refused, 5000);
  equal(b.takeMessages().length, 0);
  equal(b.peers().length, 0, "no state for datagrams that did not authenticate");
});

Deno.test("an endpoint moves to the next derived key at the generation boundary, and its peer follows", () => {
  const keyId = Uint8Array.from({ length: 16 }, (_, i) => 200 - i);
  const start = KEY_GENERATION_DATAGRAMS - 4;
  const a = new Endpoint({
    nodeId: "a",
    clusterKey: KEY,
    keyId,
    rng: new Sfc32(1),
    counter: start,
  });
  const b = new Endpoint({ nodeId: "b", clusterKey: KEY, rng: new Sfc32(2) });
  const A = "10.0.0.1:1";
  const B = "10.0.0.2:1";
  const sent: Uint8Array[] = [];
  for (let i = 0; i < 10; i++) {
    a.send(i, B, 1, new TextEncoder().encode(`m${i}`));
    for (let k = 0; k < 20; k++) {
      a.tick(i);
      const out = a.takeDatagrams();
      sent.push(...out.map((d) => d.bytes));
      for (const d of out) b.receive(i, A, d.bytes);
      b.tick(i);
      const back = b.takeDatagrams();
      for (const d of back) a.receive(i, B, d.bytes);
      if (out.length + back.length === 0) break;
    }
  }
  deepStrictEqual(
    b.takeMessages().map((m) => new TextDecoder().decode(m.bytes)),
    Array.from({ length: 10 }, (_, i) => `m${i}`),
  );
  const counters = sent.map((d) => {
    const outer = readOuterHeader(d, AEAD_TAG_BYTES);
    ok(outer.ok);
    return outer.value.counter;
  });
  ok(counters[0] === start && counters.some((c) => c >= KEY_GENERATION_DATAGRAMS + 4));
  // Each datagram opens under its own generation's key and not under the other one.
  for (const [i, d] of sent.entries()) {
    const g = keyGeneration(counters[i]!);
    ok(openDatagram(keyring.derive(keyId, g), d) !== undefined, `counter ${counters[i]}`);
    equal(openDatagram(keyring.derive(keyId, 1 - g), d), undefined, `counter ${counters[i]}`);
  }
});

Deno.test("sealDatagram's nonce is 0‖counter, the counter's 8 bytes as on the wire (node:crypto agrees)", async () => {
  const { createCipheriv } = await import("node:crypto");
  // A counter whose every byte differs from the next, so no byte of it may be left out.
  const counter = 0x0102_0304_0506;
  const plain = new Uint8Array(OUTER_HEADER_BYTES + 40 + AEAD_TAG_BYTES);
  for (let i = 0; i < plain.length; i++) plain[i] = (i * 29 + 11) & 0xff;
  // The counter's 8 bytes sit at offset 20 of the outer header, big-endian on the wire.
  new DataView(plain.buffer).setBigUint64(20, BigInt(counter));
  // Also its top byte: 0 here (counters stay below 2^53), so give the bytes around it values.
  plain[20] = 0x07;
  const key = keyring.derive(KEY_ID, 0);
  const sealed = plain.slice();
  sealDatagram(key, sealed);
  const nonce = new Uint8Array(12);
  nonce.set(plain.subarray(20, 28), 4);
  const cipher = createCipheriv("chacha20-poly1305", key, nonce, { authTagLength: 16 });
  cipher.setAAD(plain.subarray(0, OUTER_HEADER_BYTES), { plaintextLength: 40 });
  const text = new Uint8Array(
    cipher.update(plain.subarray(OUTER_HEADER_BYTES, OUTER_HEADER_BYTES + 40)),
  );
  cipher.final();
  deepStrictEqual(sealed.subarray(OUTER_HEADER_BYTES, OUTER_HEADER_BYTES + 40), text);
  deepStrictEqual(sealed.subarray(OUTER_HEADER_BYTES + 40), new Uint8Array(cipher.getAuthTag()));
  deepStrictEqual(
    openDatagram(key, sealed),
    plain.subarray(0, OUTER_HEADER_BYTES + 40),
    "and it opens to the header and the text",
  );
});
