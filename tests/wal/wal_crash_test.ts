import { assert, assertEquals } from "../assert.ts";
import { fromFileUrl } from "../paths.ts";
import { Sfc32 } from "../../src/lib/rng.ts";
import { Wal } from "../../src/wal/mod.ts";
import { readLines } from "../../src/lib/lines.ts";
import { checkCrashRecord } from "./crash_record.ts";

const CHILD = fromFileUrl(new URL("./crash_child.ts", import.meta.url));
const CONFIG = fromFileUrl(new URL("../../deno.json", import.meta.url));
const KILLS = 6;

/**
 * Reads `stream` line by line into `lines` until it ends. The child is killed mid-write, so a
 * torn last line (a number cut short) is dropped: only a complete line acknowledges.
 */
async function collectLines(stream: ReadableStream<Uint8Array>, lines: string[]): Promise<void> {
  for await (const line of readLines(stream, { unterminatedLine: "drop" })) lines.push(line);
}

Deno.test("Wal recovers every acknowledged record after SIGKILL of a writing process", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hookd-wal-crash-" });
  const rng = new Sfc32(Number(Deno.env.get("HOOKD_TEST_SEED") ?? 20261130));
  const acknowledged: number[] = [];
  try {
    for (let round = 0; round < KILLS; round++) {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          `--config=${CONFIG}`,
          "--allow-read",
          "--allow-write",
          CHILD,
          dir,
          String(round * 10_000_000),
          "64",
        ],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const lines: string[] = [];
      const reading = collectLines(child.stdout, lines);
      const stderr = new Response(child.stderr).text();
      // Wait for the child to acknowledge something, then kill it at a random moment.
      for (let waited = 0; lines.length === 0 && waited < 20_000; waited += 10) {
        await new Promise((r) => setTimeout(r, 10));
      }
      await new Promise((r) => setTimeout(r, 20 + rng.int(400)));
      child.kill("SIGKILL");
      const status = await child.status;
      await reading;
      assertEquals(status.signal, "SIGKILL", `child exited by itself: ${await stderr}`);
      await stderr;
      const acked = lines.filter((l) => l !== "").map(Number);
      assert(acked.length > 0, `round ${round}: the child acknowledged nothing`);
      acknowledged.push(...acked);

      const recovered: number[] = [];
      const { wal, report } = await Wal.open(dir, {
        replay: (r) => recovered.push(checkCrashRecord(r.payload)),
      });
      await wal.close();
      const present = new Set(recovered);
      const missing = acknowledged.filter((n) => !present.has(n));
      assertEquals(
        missing.length,
        0,
        `round ${round}: ${missing.length} acknowledged records lost, e.g. ${missing.slice(0, 5)}`,
      );
      for (let i = 1; i < recovered.length; i++) {
        assert(
          recovered[i]! > recovered[i - 1]!,
          `round ${round}: record ${recovered[i]} replayed after ${recovered[i - 1]}`,
        );
      }
      assertEquals(new Set(recovered).size, recovered.length, "no record replayed twice");
      if (report.truncated) assert(report.truncated.droppedBytes > 0);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
