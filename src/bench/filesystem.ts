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
