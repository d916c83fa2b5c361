/**
 * `deno bench bench/`: per-message CPU of the codecs on the hot paths — a transport datagram
 * (frames + HMAC), a SWIM packet, and a Standard Webhooks signature. These are the costs every
 * replicated record, probe and delivery pays on top of the network.
 */

import { HmacSha256Authenticator } from "../src/transport/auth.ts";
import { decodeDatagram, encodeDatagram, type Frame } from "../src/transport/frame_codec.ts";
import { decodePacket, encodePacket } from "../src/membership/codec.ts";
import type { SwimMessage } from "../src/membership/messages.ts";
import { signatureHeader } from "../src/delivery/signing.ts";

const auth = new HmacSha256Authenticator("bench-cluster-key-0123456789abcdef");
const message = new Uint8Array(100).fill(7);
// Thirteen 100-byte messages: what one 1,400-byte datagram carries.
const frames: Frame[] = [
  { type: "ack", ackEpoch: 42, ackDelayUs: 100, ranges: [{ lo: 0, hi: 99 }] },
  ...Array.from(
    { length: 13 },
    (_, i): Frame => ({ type: "message", channel: 2, msgId: i, bytes: message }),
  ),
];
const header = { nodeId: "n1", epoch: 7, dstEpoch: 42, packetNumber: 1000 };
const datagram = encodeDatagram(header, frames, auth.tagBytes, (body) => auth.sign(body));

Deno.bench("transport: encode and sign a datagram of 13 100-byte messages", () => {
  encodeDatagram(header, frames, auth.tagBytes, (body) => auth.sign(body));
});

Deno.bench("transport: verify and decode that datagram", () => {
  const tagAt = datagram.length - auth.tagBytes;
  if (!auth.verify(datagram.subarray(0, tagAt), datagram.subarray(tagAt))) throw new Error("MAC");
  const decoded = decodeDatagram(datagram, auth.tagBytes);
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
