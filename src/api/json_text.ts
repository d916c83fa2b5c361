/**
 * JSON text in and out with the client's numbers kept as they were written. A job's payload
 * is re-serialised from the parsed body, and a parse → stringify round trip through doubles
 * changes numbers: a 64-bit id 12345678901234567890 reached the receiver as
 * 12345678901234567000, 1e400 as null, -0 as 0, 1.10 as 1.1. The receiver must get the
 * numbers the client sent.
 *
 * How: JSON.parse's reviver sees each number's source text (V8's JSON.parse source text
 * access); a number whose text its double would not give back is noted by (holder object,
 * key), and the payload is written with those texts as `JSON.rawJSON`. The parsed value stays
 * plain JSON, so other fields (maxAttempts, timeoutMs) are checked as numbers as before. A
 * reviver costs about ten times a plain parse, so a scan for such numbers comes first and most
 * bodies (ordinary numbers) take the plain parse.
 *
 * Owns parsing and writing only; pure, no I/O. `parseJson` throws what JSON.parse throws.
 */

import { assert } from "../lib/assert.ts";

/** In V8 (and so Deno 2) since 2023; TypeScript's lib does not declare it yet. */
const rawJSON = (JSON as unknown as { rawJSON?: (text: string) => unknown }).rawJSON;
assert(typeof rawJSON === "function", "this runtime has no JSON.rawJSON (Deno 2 has)");

/** Source texts of the numbers a double would not write back as given, by holder and key. */
export type NumberTexts = WeakMap<object, Map<string, string>>;

export interface ParsedJson {
  readonly value: unknown;
  /** Absent when every number in the text round-trips. */
  readonly numberTexts?: NumberTexts;
}

/** Number-like runs of text (inside strings too: a false alarm only costs the slow parse). */
const NUMBER_TOKEN = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

interface SourceContext {
  readonly source?: string;
}

/** Whether some number token would come back different from a double. */
function hasFragileNumber(text: string): boolean {
  NUMBER_TOKEN.lastIndex = 0;
  for (let match = NUMBER_TOKEN.exec(text); match !== null; match = NUMBER_TOKEN.exec(text)) {
    const token = match[0];
    if (String(Number(token)) !== token) return true;
  }
  return false;
}

export function parseJson(text: string): ParsedJson {
  if (!hasFragileNumber(text)) return { value: JSON.parse(text) };
  const numberTexts: NumberTexts = new WeakMap();
  const value = JSON.parse(
    text,
    function (this: object, key: string, value: unknown, context?: SourceContext) {
      const source = context?.source;
      if (typeof value === "number" && source !== undefined && JSON.stringify(value) !== source) {
        let texts = numberTexts.get(this);
        if (texts === undefined) {
          texts = new Map();
          numberTexts.set(this, texts);
        }
        texts.set(key, source);
      }
      return value;
    },
  );
  return { value, numberTexts };
}

/**
 * `holder[key]` as JSON text, its numbers as the client wrote them. Throws what
 * JSON.stringify throws (a nesting too deep).
 */
export function stringifyKept(
  holder: Readonly<Record<string, unknown>>,
  key: string,
  numberTexts: NumberTexts | undefined,
): string {
  const value = holder[key];
  if (numberTexts === undefined) return JSON.stringify(value);
  const own = numberTexts.get(holder)?.get(key);
  if (typeof value === "number" && own !== undefined) return own;
  return JSON.stringify(value, function (this: object, k: string, v: unknown) {
    if (typeof v !== "number") return v;
    const text = numberTexts.get(this)?.get(k);
    return text === undefined ? v : rawJSON!(text);
  });
}
