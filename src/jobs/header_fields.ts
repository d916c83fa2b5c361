/**
 * A job's (or an endpoint's) headers as bytes: a count, then each name and value. Shared by
 * the job codec (job_codec.ts), its messages (job_messages.ts) and the endpoint codec
 * (endpoint_codec.ts), all bounded by `JOB_LIMITS`, since an endpoint's headers go into its
 * jobs. Encoders assert the bounds; the reader throws `DecodeError`, which its callers turn
 * into an error value.
 */

import { ByteReader, ByteWriter, DecodeError } from "../lib/bytes.ts";
import { fail } from "../lib/assert.ts";
import { JOB_LIMITS } from "../config/job_limits.ts";

/**
 * A job's headers: a count, then names and values. Asserts the count and the total, as
 * `readHeaders` checks them (each string's own bound is asserted by `str`).
 */
export function writeHeaders(w: ByteWriter, headers: Readonly<Record<string, string>>): void {
  const names = Object.keys(headers);
  if (!(names.length <= JOB_LIMITS.headersMax)) fail(`${names.length} headers exceed headersMax`);
  w.u16(names.length);
  const start = w.length;
  for (const name of names) {
    w.str(name, JOB_LIMITS.headerBytesMax).str(headers[name]!, JOB_LIMITS.headerBytesMax);
  }
  // Each string's 4-byte length prefix is not part of the headers' bytes.
  const bytes = w.length - start - 8 * names.length;
  if (!(bytes <= JOB_LIMITS.headersBytesMax)) {
    fail(`headers of ${bytes} bytes exceed headersBytesMax`);
  }
}

export function readHeaders(r: ByteReader): Record<string, string> {
  const count = r.u16();
  if (count > JOB_LIMITS.headersMax) throw new DecodeError("too many headers");
  const headers: Record<string, string> = {};
  const start = r.offset;
  for (let i = 0; i < count; i++) {
    const name = r.str(JOB_LIMITS.headerBytesMax);
    headers[name] = r.str(JOB_LIMITS.headerBytesMax);
  }
  if (r.offset - start - 8 * count > JOB_LIMITS.headersBytesMax) {
    throw new DecodeError("headers too large");
  }
  return headers;
}
