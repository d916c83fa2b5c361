import { assert, assertEquals } from "../assert.ts";
import { HOOKD_PERMISSIONS, hookdArgv, hookdCommand } from "../../src/process/self_command.ts";
import { parseFindmntJson, parseStatType } from "../../src/bench/filesystem.ts";

const FINDMNT_STACKED = JSON.stringify({
  filesystems: [
    { fstype: "tmpfs", source: "tmpfs", target: "/dev/shm" },
    { fstype: "tmpfs", source: "shm", target: "/dev/shm" },
  ],
});

Deno.test("parseFindmntJson takes the mount on top, and says no to what is not findmnt's answer", () => {
  assertEquals(
    parseFindmntJson(
      '{"filesystems": [{"fstype": "ext4", "source": "/dev/vda", "target": "/"}]}',
    ),
    { ok: true, value: { fsType: "ext4", mountPoint: "/", source: "/dev/vda" } },
  );
  assertEquals(
    parseFindmntJson(FINDMNT_STACKED),
    { ok: true, value: { fsType: "tmpfs", mountPoint: "/dev/shm", source: "shm" } },
  );
  assertEquals(
    parseFindmntJson('{"filesystems": [{"fstype": "xfs", "source": null}]}'),
    { ok: true, value: { fsType: "xfs", mountPoint: null, source: null } },
  );
  for (
    const junk of [
      "",
      "findmnt: nope",
      "null",
      "[]",
      '{"filesystems": []}',
      '{"filesystems": [null]}',
      '{"filesystems": [{"fstype": 3}]}',
    ]
  ) {
    assertEquals(parseFindmntJson(junk).ok, false, junk);
  }
});

Deno.test("parseStatType reads one type name", () => {
  assertEquals(parseStatType("tmpfs\n"), {
    ok: true,
    value: { fsType: "tmpfs", mountPoint: null, source: null },
  });
  assertEquals(parseStatType("ext2/ext3\n").ok, true);
  assertEquals(parseStatType("").ok, false);
  assertEquals(parseStatType("stat: cannot read file system information\n").ok, false);
});

const decoder = new TextDecoder();

/** The filesystem type of `dir` as `df` reads it, or undefined where there is no GNU df. */
async function dfType(dir: string): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("df", { args: ["--output=fstype", dir] }).output();
    if (!out.success) return undefined;
    return decoder.decode(out.stdout).trim().split("\n").pop()?.trim();
  } catch {
    return undefined;
  }
}

function lastJson(stdout: Uint8Array): Record<string, unknown> {
  return JSON.parse(decoder.decode(stdout).trim().split("\n").pop()!);
}

const QUICK = ["bench", "wal", "--seconds", "0.1", "--concurrency", "4", "--json"];

Deno.test("hookd bench wal names the filesystem it ran on, as df does", async () => {
  const dir = await Deno.makeTempDir({ prefix: "hookd-wal-bench-test-" });
  try {
    const expected = await dfType(dir);
    const output = await hookdCommand([...QUICK, "--dir", dir]).output();
    const stderr = decoder.decode(output.stderr);
    if (expected === "tmpfs" || expected === "ramfs") {
      assertEquals(output.code, 1, stderr);
      assert(stderr.includes("refusing"), stderr);
      return;
    }
    assertEquals(output.code, 0, stderr);
    const result = lastJson(output.stdout);
    if (expected !== undefined) assertEquals(result.filesystem, expected);
    assert(typeof result.filesystem_mount_point === "string", stderr);
    assert(stderr.includes(`log on ${result.filesystem}`), stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hookd bench wal refuses tmpfs, and with --allow-tmpfs runs and warns", async (t) => {
  if (await dfType("/dev/shm") !== "tmpfs") {
    t.step("skipped: no tmpfs at /dev/shm", () => {});
    return;
  }
  // Deno asks for --allow-all to touch /dev, so this child gets it instead of hookd's own set.
  const run = (args: string[]) => {
    const argv = hookdArgv(args);
    const rest = argv.args.filter((a) => !(HOOKD_PERMISSIONS as readonly string[]).includes(a));
    return new Deno.Command(argv.program, {
      args: [rest[0]!, "--allow-all", ...rest.slice(1)],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  };
  const refused = await run([...QUICK, "--dir", "/dev/shm"]);
  const refusal = decoder.decode(refused.stderr);
  assertEquals(refused.code, 1, refusal);
  assert(refusal.includes("refusing to run on tmpfs"), refusal);
  assertEquals(decoder.decode(refused.stdout).trim(), "", "no figures from a refused run");

  const allowed = await run([...QUICK, "--dir", "/dev/shm", "--allow-tmpfs"]);
  const warned = decoder.decode(allowed.stderr);
  assertEquals(allowed.code, 0, warned);
  const result = lastJson(allowed.stdout);
  assertEquals(result.filesystem, "tmpfs");
  assertEquals(result.filesystem_mount_point, "/dev/shm");
  assert(String(result.warning).includes("fsync is free"), JSON.stringify(result));
  assert(warned.trim().split("\n").pop()!.includes("WARNING"), "the warning comes last");
});
