import { assertEquals, assertRejects } from "../assert.ts";
import { LineTooLongError, readLines } from "../../src/lib/lines.ts";

/** A byte stream that delivers `chunks` one by one, as a pipe would. */
function streamOf(chunks: readonly (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return ReadableStream.from(chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c));
}

async function collect(
  chunks: readonly (string | Uint8Array)[],
  options?: Parameters<typeof readLines>[1],
): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of readLines(streamOf(chunks), options)) lines.push(line);
  return lines;
}

Deno.test("readLines splits at newlines wherever the chunks break, empty lines included", async () => {
  assertEquals(await collect(["a\nb", "c\n\nd", "\n"]), ["a", "bc", "", "d"]);
  assertEquals(await collect(["one line\n"]), ["one line"]);
  assertEquals(await collect(["x", "y", "z\n"]), ["xyz"]);
  assertEquals(await collect([]), []);
  assertEquals(await collect(["\n\n"]), ["", ""]);
});

Deno.test("readLines yields an unterminated last line unless told to drop it", async () => {
  assertEquals(await collect(["done\n", "torn"]), ["done", "torn"]);
  assertEquals(await collect(["done\n", "torn"], { unterminatedLine: "drop" }), ["done"]);
  assertEquals(await collect(["done\n"], { unterminatedLine: "drop" }), ["done"]);
});

Deno.test("readLines decodes a UTF-8 character split across chunks", async () => {
  const bytes = new TextEncoder().encode("né\n");
  assertEquals(await collect([bytes.slice(0, 2), bytes.slice(2)]), ["né"]);
});

Deno.test("readLines refuses a line past lineCharsMax, whether or not its newline came", async () => {
  assertEquals(await collect(["1234\n"], { lineCharsMax: 4 }), ["1234"]);
  await assertRejects(() => collect(["123", "45\n"], { lineCharsMax: 4 }), LineTooLongError);
  await assertRejects(() => collect(["12", "34", "5"], { lineCharsMax: 4 }), LineTooLongError);
});
