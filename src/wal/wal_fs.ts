/**
 * The file-system adapter the WAL writes through, and its Deno implementation.
 *
 * Owns nothing but the mapping to `Deno` file APIs (the stand-in for `@std/fs`). The WAL never
 * touches `Deno` directly, so tests inject write and fsync failures and the simulator swaps in
 * a disk that loses unsynced writes on a crash (src/sim/disk.ts).
 */

import { walDefaults } from "../config/wal.ts";

export interface WalFile {
  /** Appends all of `bytes` at the end of the file. */
  writeAll(bytes: Uint8Array): Promise<void>;
  /**
   * Makes every byte written so far durable (fdatasync). `offThread`: never on the event-loop
   * thread, and not counted by the inline policy (a checkpoint's tens of MB).
   */
  syncData(offThread?: boolean): Promise<void>;
  close(): void;
}

export interface WalFs {
  mkdirp(dir: string): Promise<void>;
  /** Names (not paths) of the regular files in `dir`. */
  list(dir: string): Promise<string[]>;
  readFile(path: string): Promise<Uint8Array>;
  /** Up to `lengthBytes` bytes of `path` from `offset`; fewer where the file ends. */
  readRange(path: string, offset: number, lengthBytes: number): Promise<Uint8Array>;
  /** Opens `path` for appending, creating it when `create` is set. */
  openAppend(path: string, create: boolean): Promise<WalFile>;
  /** Cuts `path` to `lengthBytes` and makes the cut durable. */
  truncate(path: string, lengthBytes: number): Promise<void>;
  remove(path: string): Promise<void>;
  /** Makes file creations and removals in `dir` durable (fsync of the directory). */
  syncDir(dir: string): Promise<void>;
}

export function joinPath(dir: string, name: string): string {
  return dir.endsWith("/") ? `${dir}${name}` : `${dir}/${name}`;
}

/**
 * A batch up to this size is written synchronously (a copy into the page cache, which stalls
 * the event loop for microseconds); a larger one (a checkpoint, a burst's batch) asynchronously.
 */
const SYNC_WRITE_BYTES_MAX = 256 * 1024;

/**
 * Whether the next fsync runs inline on the event-loop thread: while a moving average of the
 * recent ones (inline or not, measured from call to completion) stays under `limitMs`. One per
 * file system, as the disk is what it measures. Pure: the clock is the caller's.
 */
export class InlineSyncPolicy {
  readonly limitMs: number;
  #averageMs = 0;

  constructor(limitMs: number) {
    this.limitMs = limitMs;
  }

  inline(): boolean {
    return this.#averageMs < this.limitMs;
  }

  /**
   * An fsync took `ms`. A weight of 1/5 for the newest: one fsync of 10 × the limit moves the
   * next ones off-thread, and about eight fast ones bring them back.
   */
  observe(ms: number): void {
    this.#averageMs += (ms - this.#averageMs) / 5;
  }
}

class DenoWalFile implements WalFile {
  readonly #file: Deno.FsFile;
  /** Undefined when inline fsyncs are off (`inlineSyncMsMax` 0): nothing to measure. */
  readonly #policy: InlineSyncPolicy | undefined;
  readonly #beforeInlineSync: () => void;

  constructor(
    file: Deno.FsFile,
    policy: InlineSyncPolicy | undefined,
    beforeInlineSync: () => void,
  ) {
    this.#file = file;
    this.#policy = policy;
    this.#beforeInlineSync = beforeInlineSync;
  }

  async writeAll(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    if (bytes.length <= SYNC_WRITE_BYTES_MAX) {
      // Into the page cache in a few µs on this thread. The async write is a round trip through
      // Deno's blocking-thread pool, which a lone job's batch on a loaded 2-core machine waited
      // 1.5 ms for before its fsync could even start (issue 19).
      while (offset < bytes.length) offset += this.#file.writeSync(bytes.subarray(offset));
      return;
    }
    while (offset < bytes.length) {
      offset += await this.#file.write(bytes.subarray(offset));
    }
  }

  syncData(offThread = false): Promise<void> {
    const policy = this.#policy;
    if (policy === undefined || offThread) return this.#file.syncData();
    if (policy.inline()) {
      try {
        this.#beforeInlineSync();
      } catch {
        // The hook only hurries other work along; the fsync must happen regardless.
      }
      const startMs = performance.now();
      try {
        this.#file.syncDataSync();
      } catch (error) {
        return Promise.reject(error);
      } finally {
        policy.observe(performance.now() - startMs);
      }
      return Promise.resolve();
    }
    const startMs = performance.now();
    return this.#file.syncData().finally(() => policy.observe(performance.now() - startMs));
  }

  close(): void {
    this.#file.close();
  }
}

/**
 * The WAL's file system on Deno. `inlineSyncMsMax` is `WalConfig.inlineSyncMsMax`: how slow the
 * recent fsyncs may be before they leave the event-loop thread.
 */
export function denoWalFsWith(options: {
  inlineSyncMsMax: number;
  /** Runs just before an fsync blocks the thread inline (not before one in the pool). */
  beforeInlineSync?: () => void;
}): WalFs {
  const policy = options.inlineSyncMsMax > 0
    ? new InlineSyncPolicy(options.inlineSyncMsMax)
    : undefined;
  const beforeInlineSync = options.beforeInlineSync ?? (() => {});
  return {
    ...denoFileSystem,
    async openAppend(path, create) {
      const file = await Deno.open(path, { append: true, create, createNew: false, read: false });
      return new DenoWalFile(file, policy, beforeInlineSync);
    },
  };
}

const denoFileSystem: Omit<WalFs, "openAppend"> = {
  async mkdirp(dir) {
    // A new directory's own entry must be made durable too (an fsync of its parent), or a
    // crash could take the whole log, acknowledged records and all, with it.
    const missing: string[] = [];
    for (let at = dir; missing.length < 64;) {
      try {
        await Deno.stat(at);
        break;
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
        missing.push(at);
        const parent = parentDir(at);
        if (parent === at) break;
        at = parent;
      }
    }
    if (missing.length === 0) return;
    await Deno.mkdir(dir, { recursive: true });
    for (const created of missing) await syncDirectory(parentDir(created));
  },
  async list(dir) {
    const names: string[] = [];
    for await (const entry of Deno.readDir(dir)) if (entry.isFile) names.push(entry.name);
    return names;
  },
  readFile(path) {
    return Deno.readFile(path);
  },
  async readRange(path, offset, lengthBytes) {
    const file = await Deno.open(path, { read: true });
    try {
      await file.seek(offset, Deno.SeekMode.Start);
      const out = new Uint8Array(lengthBytes);
      let filled = 0;
      while (filled < lengthBytes) {
        const n = await file.read(out.subarray(filled));
        if (n === null) break;
        filled += n;
      }
      return out.subarray(0, filled);
    } finally {
      file.close();
    }
  },
  async truncate(path, lengthBytes) {
    const file = await Deno.open(path, { write: true });
    try {
      await file.truncate(lengthBytes);
      await file.syncData();
    } finally {
      file.close();
    }
  },
  remove(path) {
    return Deno.remove(path);
  },
  syncDir(dir) {
    return syncDirectory(dir);
  },
};

/** The WAL's file system on Deno with the default `inlineSyncMsMax`. */
export const denoWalFs: WalFs = denoWalFsWith(walDefaults);

async function syncDirectory(dir: string): Promise<void> {
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.sync();
  } finally {
    handle.close();
  }
}

/** The directory holding `path` ("." for a bare name, "/" at the root). */
function parentDir(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  if (trimmed === "") return "/";
  const slash = trimmed.lastIndexOf("/");
  if (slash < 0) return ".";
  return slash === 0 ? "/" : trimmed.slice(0, slash);
}
