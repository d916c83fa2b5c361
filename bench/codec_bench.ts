/**
 * `deno bench bench/`: per-message CPU of the codecs on the hot paths — a transport datagram
 * (frames, sealed with ChaCha20-Poly1305; the HMAC-SHA256 of wire version 1 beside it for
 * comparison), a SWIM packet, and a Standard Webhooks signature. These are the costs every
 * replicated record, probe and delivery pays on top of the network.
 */

import { HmacSha256Authenticator } from "../src/transport/auth.ts";
import {
  AEAD_TAG_BYTES,
  ClusterKeyring,
  openDatagram,
  sealDatagram,
} from "../src/transport/datagram_crypto.ts";
import { decodeDatagram, encodeDatagram, type Frame } from "../src/transport/frame_codec.ts";
import { decodePacket, encodePacket } from "../src/membership/codec.ts";
import type { SwimMessage } from "../src/membership/messages.ts";
import { signatureHeader } from "../src/delivery/signing.ts";

const CLUSTER_KEY = "bench-cluster-key-0123456789abcdef";
const auth = new HmacSha256Authenticator(CLUSTER_KEY);
const keyId = new Uint8Array(16).fill(5);
const key = new ClusterKeyring(CLUSTER_KEY).derive(keyId, 0);
const message = new Uint8Array(100).fill(7);
// Thirteen 100-byte messages: what one 1,400-byte datagram carries.
const frames: Frame[] = [
  { type: "ack", ackEpoch: 42, ackDelayUs: 100, ranges: [{ lo: 0, hi: 99 }] },
  ...Array.from(
    { length: 13 },
    (_, i): Frame => ({ type: "message", channel: 2, msgId: i, bytes: message }),
  ),
];
const header = { keyId, counter: 1000, nodeId: "n1", epoch: 7, dstEpoch: 42, packetNumber: 1000 };
const seal = (d: Uint8Array) => sealDatagram(key, d);
const sealed = encodeDatagram(header, frames, AEAD_TAG_BYTES, seal);
const hmacTagBytes = auth.tagBytes;
const hmacSign = (d: Uint8Array) => {
  d.set(auth.sign(d.subarray(0, d.length - hmacTagBytes)), d.length - hmacTagBytes);
};
const signed = encodeDatagram(header, frames, hmacTagBytes, hmacSign);

Deno.bench("transport: encode and seal (ChaCha20-Poly1305) a datagram of 13 100-byte messages", {
  group: "datagram out",
  baseline: true,
}, () => {
  encodeDatagram(header, frames, AEAD_TAG_BYTES, seal);
});

Deno.bench("transport: encode and sign (HMAC-SHA256, wire v1's MAC) the same datagram", {
  group: "datagram out",
}, () => {
  encodeDatagram(header, frames, hmacTagBytes, hmacSign);
});

Deno.bench("transport: open (ChaCha20-Poly1305) and decode that datagram", {
  group: "datagram in",
  baseline: true,
}, () => {
  const plain = openDatagram(key, sealed);
  if (plain === undefined) throw new Error("AEAD");
  const decoded = decodeDatagram(plain, 0);
  if (!decoded.ok) throw new Error(decoded.reason);
});

Deno.bench("transport: verify (HMAC-SHA256) and decode that datagram", {
  group: "datagram in",
}, () => {
  const tagAt = signed.length - hmacTagBytes;
  if (!auth.verify(signed.subarray(0, tagAt), signed.subarray(tagAt))) throw new Error("MAC");
  const decoded = decodeDatagram(signed, hmacTagBytes);
  if (!decoded.ok) throw new Error(decoded.reason);
});

const swim: SwimMessage[] = [
  { type: "ping", seq: 12345, targetId: "n3", targetIncarnation: 1764500000, targetSuspect: false },
  { type: "alive", nodeId: "n4", address: "127.0.0.1:7104", incarnation: 1764500001 },
  { type: "suspect", nodeId: "n5", incarnation: 1764500002, fromId: "n2" },
];
const swimPacket = encodePacket(swim);

Deno.bench("membership: encode a ping with two gossip messages", () => {
  encodePacket(swim);
});

Deno.bench("membership: decode a ping with two gossip messages", () => {
  const decoded = decodePacket(swimPacket);
  if (!decoded.ok) throw new Error(decoded.reason);
});

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const body = JSON.stringify({ type: "invoice.paid", data: "x".repeat(200) });

Deno.bench("delivery: Standard Webhooks signature of a 256-byte body", () => {
  signatureHeader([secret], "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", 1764500000, body);
});
