import { assert, assertRejects } from "../assert.ts";
import { DataDirLockedError, lockDataDir } from "../../src/jobs/data_dir_lock.ts";
import { hookdCommand } from "../../src/process/self_command.ts";

/** How long the refused node may take to exit (startup of `deno run` included). */
const EXIT_WAIT_MS = 30_000;

Deno.test("a data directory is locked against a second opener, and released on release", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hookd-lock-test-" });
  try {
    const lock = await lockDataDir(dir);
    await assertRejects(() => lockDataDir(dir), DataDirLockedError);
    lock.release();
    const again = await lockDataDir(dir);
    again.release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a second hookd node on the same --data directory exits at once with a clear error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hookd-lock-test-" });
  const lock = await lockDataDir(dir);
  try {
    const child = hookdCommand([
      "node",
      "--id",
      "n1",
      "--listen",
      "127.0.0.1:0",
      "--data",
      dir,
      "--cluster-key",
      "lock-test-cluster-key-0123456789",
    ]).spawn();
    // Bounded: a node that took the directory anyway would run until killed.
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill("SIGKILL");
    }, EXIT_WAIT_MS);
    const output = await child.output();
    clearTimeout(timer);
    const stderr = new TextDecoder().decode(output.stderr);
    assert(!killed, `the second node was still running after ${EXIT_WAIT_MS} ms: ${stderr}`);
    assert(output.code === 1, `exit code ${output.code}: ${stderr}`);
    assert(/in use by another hookd process/.test(stderr), stderr);
  } finally {
    lock.release();
    await Deno.remove(dir, { recursive: true });
  }
});
