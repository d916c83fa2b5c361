import { assert, assertEquals, assertThrows } from "../assert.ts";
import {
  type CommandSpec,
  listFlag,
  numberFlag,
  parseCommandArgs,
  renderHelp,
  UsageError,
} from "../../src/process/args.ts";

const spec: CommandSpec = {
  name: "bench demo",
  summary: "a demo",
  flags: {
    seconds: { type: "string", valueName: "S", default: "5", help: "Seconds" },
    peer: { type: "string", multiple: true, help: "Peers" },
    json: { type: "boolean", help: "JSON" },
  },
};

Deno.test("parseCommandArgs applies defaults and reads every flag kind", () => {
  const parsed = parseCommandArgs(spec, ["--json", "--peer", "a,b", "--peer", "c"]);
  assertEquals(parsed.help, false);
  assertEquals(numberFlag(parsed.values, "seconds", 1), 5);
  assertEquals(listFlag(parsed.values, "peer"), ["a", "b", "c"]);
  assertEquals(parsed.values.json, true);
  assert(parseCommandArgs(spec, ["-h"]).help);
});

Deno.test("parseCommandArgs turns an unknown flag or a stray positional into a one-line UsageError", () => {
  for (const args of [["--nope"], ["extra"], ["--seconds"]]) {
    try {
      parseCommandArgs(spec, args);
      throw new Error(`accepted ${args.join(" ")}`);
    } catch (error) {
      assert(error instanceof UsageError, String(error));
      assert(!error.message.includes("\n"), error.message);
      assert(error.message.startsWith("hookd bench demo: "), error.message);
    }
  }
});

Deno.test("numberFlag refuses values outside its rule with a UsageError naming the flag", () => {
  const bad = ["", "abc", "1.5", "0", "101", "NaN", "Infinity"];
  for (const raw of bad) {
    assertThrows(
      () => numberFlag({ n: raw }, "n", 1, { min: 1, max: 100, integer: true }),
      UsageError,
    );
  }
  assertEquals(numberFlag({ n: "42" }, "n", 1, { min: 1, max: 100, integer: true }), 42);
  assertEquals(numberFlag({}, "n", 7), 7);
});

Deno.test("renderHelp lists every flag with its default", () => {
  const help = renderHelp(spec);
  assert(help.includes("--seconds S"), help);
  assert(help.includes("(default: 5)"), help);
  assert(help.includes("-h, --help"), help);
});
