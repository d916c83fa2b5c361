/**
 * The one reader of another process's output line by line: hookd's child processes (sinks,
 * bench peers, cluster nodes, crash-test writers) speak JSON lines or plain lines on stdout.
 *
 * Owns splitting a UTF-8 byte stream at "\n" into lines without their "\n" (a "\r" before it
 * is kept: no hookd process writes one). Bounded: a line longer than `lineCharsMax` throws
 * instead of growing without end, since a child that never prints "\n" would otherwise fill
 * memory. Must not parse what the lines say.
 */

import { fail } from "./assert.ts";

/**
 * Longest line read from a child process's output, UTF-16 code units; a longer one is an
 * error, not a buffer that grows until memory runs out. hookd's children print JSON lines of a
 * few thousand characters at most (a node event, a bench result); 1 MiB is far above them.
 * The default of `lineCharsMax`, defined here rather than in src/config.ts so that lib/, the
 * bottom layer, imports nothing above it; src/config.ts re-exports it with the other defaults.
 */
export const LINE_CHARS_MAX = 1_048_576;

export interface ReadLinesOptions {
  /**
   * What to do with text after the last "\n" when the stream ends. A process killed in the
   * middle of a write leaves a torn line; `"drop"` it where only complete lines may count.
   * @default "yield"
   */
  unterminatedLine?: "yield" | "drop";
  /** Longest line, in UTF-16 code units. @default LINE_CHARS_MAX */
  lineCharsMax?: number;
}

/** A line passed `lineCharsMax` before its "\n" came. */
export class LineTooLongError extends Error {
  override name = "LineTooLongError";
}

/** Yields each line of `stream` as it completes, in order, empty lines included. */
export async function* readLines(
  stream: ReadableStream<Uint8Array>,
  options: ReadLinesOptions = {},
): AsyncGenerator<string, void, undefined> {
  const unterminatedLine = options.unterminatedLine ?? "yield";
  const lineCharsMax = options.lineCharsMax ?? LINE_CHARS_MAX;
  if (!(Number.isInteger(lineCharsMax) && lineCharsMax > 0)) {
    fail(`lineCharsMax must be a positive integer, got ${lineCharsMax}`);
  }
  // The start of the current line: every chunk since its last "\n". Split per chunk, so a
  // long line arriving in many chunks is not copied again for each of them.
  let pending: string[] = [];
  let pendingChars = 0;
  const refuse = (chars: number) => {
    throw new LineTooLongError(`a line passed ${lineCharsMax} characters (${chars} so far)`);
  };
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const parts = chunk.split("\n");
    const last = parts.pop()!;
    for (const part of parts) {
      if (pendingChars + part.length > lineCharsMax) refuse(pendingChars + part.length);
      pending.push(part);
      yield pending.join("");
      pending = [];
      pendingChars = 0;
    }
    if (last !== "") {
      pendingChars += last.length;
      if (pendingChars > lineCharsMax) refuse(pendingChars);
      pending.push(last);
    }
  }
  if (pending.length > 0 && unterminatedLine === "yield") yield pending.join("");
}
