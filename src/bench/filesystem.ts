/**
 * Which filesystem a directory lives on, for benches whose figures depend on it: an fsync on
 * tmpfs costs nothing, so WAL figures measured there say nothing about a disk.
 *
 * Owns asking the system and reading its answer. Deno 2 reads /proc/self/mountinfo only under
 * --allow-all, which hookd does not run with, so it asks `findmnt` (util-linux, which reads
 * that file and resolves stacked and bind mounts), and where there is no findmnt, `stat -f`
 * for the type alone. The parsers never throw on what a tool prints: they return
 * `{ok:false, reason}`. Must not decide what a bench does about the answer.
 */

import { err, ok, type Result } from "../lib/result.ts";

export interface Filesystem {
  /** `tmpfs`, `ext4`, `overlay`, … */
  fsType: string;
  /** Where it is mounted; null when the tool that answered does not say. */
  mountPoint: string | null;
  /** What is mounted (a block device, `tmpfs`, …); null when the tool does not say. */
  source: string | null;
}

export type FilesystemInfo =
  | { known: true; path: string; via: "findmnt" | "stat -f" } & Filesystem
  | { known: false; path: string; reason: string };

/** Filesystems held in memory, where `fsync` returns at once and durability is not measured. */
export const MEMORY_FILESYSTEMS: ReadonlySet<string> = new Set(["tmpfs", "ramfs"]);

/**
 * Reads `findmnt -J -o FSTYPE,SOURCE,TARGET --target DIR`. Of several mounts on one point the
 * last is on top (it hides the others), and findmnt lists them in mount order.
 */
export function parseFindmntJson(text: string): Result<Filesystem> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return err("findmnt printed no JSON");
  }
  const list = (parsed as { filesystems?: unknown } | null)?.filesystems;
  if (!Array.isArray(list) || list.length === 0) return err("findmnt listed no filesystem");
  const top = list[list.length - 1] as Record<string, unknown> | null;
  const fsType = top?.fstype;
  if (typeof fsType !== "string" || fsType === "") return err("findmnt gave no fstype");
  const text_ = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  return ok({ fsType, mountPoint: text_(top?.target), source: text_(top?.source) });
}

/** Reads `stat -f -c %T DIR`: the type name statfs(2) reports (ext4 shows as `ext2/ext3`). */
export function parseStatType(text: string): Result<Filesystem> {
  const fsType = text.trim();
  if (fsType === "" || /\s/.test(fsType)) return err(`stat -f printed ${JSON.stringify(text)}`);
  return ok({ fsType, mountPoint: null, source: null });
}

async function stdoutOf(program: string, args: string[]): Promise<Result<string>> {
  try {
    const out = await new Deno.Command(program, { args, stdin: "null", stderr: "null" }).output();
    if (!out.success) return err(`${program} exited ${out.code}`);
    return ok(new TextDecoder().decode(out.stdout));
  } catch (error) {
    return err(`${program}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The filesystem `dir` is on; `known: false` with the reasons where nothing could tell. */
export async function filesystemOf(dir: string): Promise<FilesystemInfo> {
  let path = dir;
  try {
    path = await Deno.realPath(dir);
  } catch {
    // Asked about the path as given; the tools say whether it exists.
  }
  const findmnt = await stdoutOf("findmnt", ["-J", "-o", "FSTYPE,SOURCE,TARGET", "--target", path]);
  const fromFindmnt = findmnt.ok ? parseFindmntJson(findmnt.value) : findmnt;
  if (fromFindmnt.ok) return { known: true, path, via: "findmnt", ...fromFindmnt.value };
  const stat = await stdoutOf("stat", ["-f", "-c", "%T", path]);
  const fromStat = stat.ok ? parseStatType(stat.value) : stat;
  if (fromStat.ok) return { known: true, path, via: "stat -f", ...fromStat.value };
  return { known: false, path, reason: `${fromFindmnt.reason}; ${fromStat.reason}` };
}

/**
 * Where a bench's WALs live, as its figures must say: an fsync on a memory filesystem returns
 * at once, so WAL figures measured there (and a cluster's latencies, which wait for fsyncs on a
 * majority) are not measurements of durable writes.
 */
export interface WalFilesystem {
  /** What the system said. */
  readonly info: FilesystemInfo;
  /** The filesystem type (`ext4`, `tmpfs`, …), or "unknown" when nothing could tell. */
  readonly fsType: string;
  /** Set on a memory filesystem (`MEMORY_FILESYSTEMS`): the type, for refusals and warnings. */
  readonly memory: string | undefined;
  /** Set on a memory filesystem: the warning every figure of the run carries. */
  readonly warning: string | undefined;
  /** One line for the bench's log: the filesystem, and where it is mounted. */
  readonly description: string;
}

/**
 * What `info` means for WAL figures (pure). `dir` names where the WALs go (the directory a
 * probe was made in; `info.path` by default).
 */
export function walFilesystem(info: FilesystemInfo, dir: string = info.path): WalFilesystem {
  if (!info.known) {
    return {
      info,
      fsType: "unknown",
      memory: undefined,
      warning: undefined,
      description: `WALs in ${dir}, filesystem unknown (${info.reason})`,
    };
  }
  const where = info.mountPoint === null
    ? `by ${info.via}`
    : `${info.source ?? "?"} mounted on ${info.mountPoint}`;
  const memory = MEMORY_FILESYSTEMS.has(info.fsType) ? info.fsType : undefined;
  return {
    info,
    fsType: info.fsType,
    memory,
    warning: memory === undefined
      ? undefined
      : `the WALs were on ${memory}, where fsync is free: these figures measure CPU and ` +
        `latency without durable writes, not a disk`,
    description: `WALs in ${dir}, on ${info.fsType} (${where})`,
  };
}

/**
 * Why a bench does not put its WALs on memory filesystem `placement` without `--allow-tmpfs`;
 * `fix` says how to move them (the bench's own flag, or TMPDIR).
 */
export function memoryFilesystemRefusal(placement: WalFilesystem, fix: string): string {
  return `refusing to run on ${placement.fsType} (${placement.description}): fsync costs ` +
    `nothing there, so nothing measured would include a durable write. ${fix}, or pass ` +
    `--allow-tmpfs to run anyway (the figures then carry a warning).`;
}

/** `memoryFilesystemRefusal`'s fix for the benches whose nodes' data directories go to TMPDIR. */
export const SET_TMPDIR = "Set TMPDIR to a directory on a disk-backed filesystem";

/**
 * The filesystem a bench's WALs would land on: a scratch directory made (and removed) in
 * `parent`, or in the system's temp directory (`TMPDIR`) where the benches make theirs.
 */
export async function probeWalFilesystem(parent?: string): Promise<WalFilesystem> {
  const probe = await Deno.makeTempDir({
    prefix: "hookd-bench-fs-probe-",
    ...(parent !== undefined ? { dir: parent } : {}),
  });
  const lastSlash = probe.lastIndexOf("/");
  const dir = lastSlash > 0 ? probe.slice(0, lastSlash) : "/";
  try {
    return walFilesystem(await filesystemOf(probe), dir);
  } finally {
    await Deno.remove(probe);
  }
}
