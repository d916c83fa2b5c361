import { assert } from "../assert.ts";
import { HOOKD_PERMISSIONS, HOOKD_V8_FLAGS, hookdArgv } from "../../src/process/self_command.ts";

Deno.test("deno.json's hookd and compile tasks start hookd as self_command does: its permissions and V8 flags", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  const v8Flags = `--v8-flags=${HOOKD_V8_FLAGS.join(",")}`;
  for (const task of ["hookd", "compile"]) {
    const words = String(config.tasks[task].command).split(/\s+/);
    for (const flag of [...HOOKD_PERMISSIONS, v8Flags]) {
      assert(words.includes(flag), `the ${task} task lacks ${flag}`);
    }
  }
  const argv = hookdArgv(["node"]);
  // Under `deno test` this process is the deno binary, so hookd runs uncompiled.
  assert(argv.args.includes(v8Flags), argv.args.join(" "));
  assert(argv.args.indexOf(v8Flags) < argv.args.findIndex((a) => a.endsWith("main.ts")));
});
