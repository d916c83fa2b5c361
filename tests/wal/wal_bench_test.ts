import { assert, assertEquals } from "../assert.ts";
import { HOOKD_PERMISSIONS, hookdArgv, hookdCommand } from "../../src/process/self_command.ts";
import { parseFindmntJson, parseStatType, walFilesystem } from "../../src/bench/filesystem.ts";

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

Deno.test("walFilesystem: a memory filesystem gets a warning, a disk and an unknown one none", () => {
  const onTmpfs = walFilesystem({
    known: true,
    path: "/dev/shm/x",
    via: "findmnt",
    fsType: "tmpfs",
    mountPoint: "/dev/shm",
    source: "shm",
  });
  assertEquals([onTmpfs.fsType, onTmpfs.memory], ["tmpfs", "tmpfs"]);
  assert(onTmpfs.warning?.includes("fsync is free"), onTmpfs.warning);
  assertEquals(onTmpfs.description, "WALs in /dev/shm/x, on tmpfs (shm mounted on /dev/shm)");
  const onDisk = walFilesystem({
    known: true,
    path: "/tmp/x",
    via: "stat -f",
    fsType: "ext2/ext3",
    mountPoint: null,
    source: null,
  });
  assertEquals([onDisk.fsType, onDisk.memory, onDisk.warning], ["ext2/ext3", undefined, undefined]);
  assertEquals(
    walFilesystem(onDisk.info, "/tmp").description,
    "WALs in /tmp, on ext2/ext3 (by stat -f)",
  );
  const unknown = walFilesystem({ known: false, path: "/x", reason: "no findmnt; no stat" });
  assertEquals([unknown.fsType, unknown.memory, unknown.warning], [
    "unknown",
    undefined,
    undefined,
  ]);
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

/**
 * Runs hookd with `--allow-all` in place of its own permissions: Deno asks for it to touch
 * /dev (the tmpfs at /dev/shm).
 */
function runWithAllowAll(args: string[], env?: Record<string, string>, cwd?: string) {
  const argv = hookdArgv(args);
  const rest = argv.args.filter((a) => !(HOOKD_PERMISSIONS as readonly string[]).includes(a));
  return new Deno.Command(argv.program, {
    args: [rest[0]!, "--allow-all", ...rest.slice(1)],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    ...(env !== undefined ? { env } : {}),
    ...(cwd !== undefined ? { cwd } : {}),
  }).output();
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
    assert(stderr.includes(`WALs in ${dir}, on ${result.filesystem}`), stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hookd bench wal refuses tmpfs, and with --allow-tmpfs runs and warns", async (t) => {
  if (await dfType("/dev/shm") !== "tmpfs") {
    t.step("skipped: no tmpfs at /dev/shm", () => {});
    return;
  }
  const run = (args: string[]) => runWithAllowAll(args);
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

Deno.test("hookd bench, bench replication and bench cost refuse to put the nodes' WALs on tmpfs", async (t) => {
  if (await dfType("/dev/shm") !== "tmpfs") {
    t.step("skipped: no tmpfs at /dev/shm", () => {});
    return;
  }
  // The nodes' data directories go under TMPDIR: both refuse before starting any process.
  for (
    const args of [
      ["bench", "--rates", "10", "--duration", "1", "--warmup", "0", "--json"],
      ["bench", "replication", "--seconds", "0.5", "--json"],
      ["bench", "cost", "--rates", "10", "--duration", "1", "--idle", "0", "--json"],
    ]
  ) {
    const refused = await runWithAllowAll(args, { TMPDIR: "/dev/shm" });
    const stderr = decoder.decode(refused.stderr);
    assertEquals(refused.code, 1, stderr);
    assert(stderr.includes("refusing to run on tmpfs"), stderr);
    assert(stderr.includes("--allow-tmpfs"), stderr);
    assertEquals(decoder.decode(refused.stdout).trim(), "", `no figures: ${args.join(" ")}`);
  }
  // bench cost measures its fsync floor under the current directory: asked about too.
  const floorRefused = await runWithAllowAll(
    [
      "bench",
      "cost",
      ...["--rates", "10", "--duration", "1", "--warmup", "0", "--idle", "0"],
      ...["--no-profile", "--floor-ops", "100", "--json"],
    ],
    undefined,
    "/dev/shm",
  );
  const floorStderr = decoder.decode(floorRefused.stderr);
  assertEquals(floorRefused.code, 1, floorStderr);
  assert(floorStderr.includes("refusing to run on tmpfs (WALs in /dev/shm"), floorStderr);
  assertEquals(decoder.decode(floorRefused.stdout).trim(), "", "no figures from bench cost");
});
