/**
 * `deno bench bench/`: micro-benchmarks of the WAL's per-record CPU cost (checksum, framing,
 * decoding), the work the writer does for every append on top of the disk.
 */

import { crc32c } from "../src/wal/crc32c.ts";
import { decodeRecord, encodeRecordInto, frameBytes, RecordType } from "../src/wal/record_codec.ts";

const SALT = 0x9e3779b9;
const payload = new Uint8Array(300).map((_, i) => i & 0xff);
const batch = new Uint8Array(frameBytes(payload.length) * 256);
let offset = 0;
for (let i = 0; i < 256; i++) {
  offset = encodeRecordInto(batch, offset, RecordType.Data, payload, SALT);
}

Deno.bench("crc32c of a 300-byte record", () => {
  crc32c(payload);
});

Deno.bench("encode a batch of 256 300-byte records", () => {
  let at = 0;
  for (let i = 0; i < 256; i++) at = encodeRecordInto(batch, at, RecordType.Data, payload, SALT);
});

Deno.bench("decode a batch of 256 300-byte records", () => {
  let at = 0;
  while (at < batch.length) {
    const frame = decodeRecord(batch, at, 1 << 20, SALT);
    if (!frame.ok) throw new Error(frame.reason);
    at = frame.next;
  }
});
