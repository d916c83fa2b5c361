/**
 * An in-memory disk for the simulator and for WAL fault tests: it implements `WalFs` and can
 * crash.
 *
 * Owns simulated files. Each file keeps what has been made durable (by `syncData`) apart from
 * what was only written. `crash()` throws away unsynced bytes — all, or a seeded random
 * prefix; with `tear`, the surviving unsynced bytes are torn as a real crash tears them: the
 * page cache writes sectors back in any order, so some never reach the disk (they read back
 * as zeros) and the last one may be half old, half garbage. It drops files whose creation,
 * and undoes removals whose unlinking, was never made durable by a directory sync. Faults (a
 * failing write or fsync, a full disk that takes part of a write before it refuses) are
 * injected per call.
 */

import type { Rng } from "../lib/rng.ts";
import { type WalFile, type WalFs } from "../wal/wal_fs.ts";

interface SimFile {
  /** Names this file (not its path: a path may be removed and created again). */
  readonly serial: number;
  /** Everything written, synced or not. Only appends change it, so a prefix is durable. */
  current: Uint8Array;
  /** How many leading bytes of `current` have been made durable. */
  durableBytes: number;
  /** The file's directory entry has been made durable. */
  linked: boolean;
}

/** `sync` fails a file's `syncData`, `dirSync` a directory's fsync. */
export type DiskFault = "write" | "sync" | "dirSync" | "full";

/** The unit in which a crash tears unsynced data. */
const SECTOR_BYTES = 512;

export class SimDisk implements WalFs {
  readonly #files = new Map<string, SimFile>();
  readonly #removedUnsynced = new Map<string, SimFile>();
  readonly #dirs = new Set<string>();
  #nextFault: { kind: DiskFault; afterCalls: number } | undefined;
  #nextSerial = 1;
  /** Bumped by `crash()`: handles opened before it belong to the dead process and fail. */
  generation = 0;
  writes = 0;
  syncs = 0;

  /** The `afterCalls`-th next call of the kind fails; `full` fails writes with ENOSPC. */
  injectFault(kind: DiskFault, afterCalls = 0): void {
    this.#nextFault = { kind, afterCalls };
  }

  #fault(call: "write" | "sync" | "dirSync"): { kind: DiskFault; error: Error } | undefined {
    const fault = this.#nextFault;
    if (fault === undefined) return undefined;
    const matches = fault.kind === call || (fault.kind === "full" && call === "write");
    if (!matches) return undefined;
    if (fault.afterCalls > 0) {
      fault.afterCalls--;
      return undefined;
    }
    this.#nextFault = undefined;
    if (fault.kind === "full") {
      return { kind: "full", error: new Error("No space left on device (os error 28)") };
    }
    return { kind: fault.kind, error: new Error(`injected ${call} failure (EIO)`) };
  }

  /**
   * Loses every unsynced byte. With `rng`, a random prefix of each file's unsynced bytes
   * survives instead, and with `tear` its last bytes are scrambled (a torn sector).
   */
  crash(rng?: Rng, tear = false): void {
    this.generation++;
    this.#nextFault = undefined;
    for (const [path, file] of this.#files) {
      if (!file.linked) {
        this.#files.delete(path);
        continue;
      }
      const unsynced = file.current.length - file.durableBytes;
      let keep = 0;
      if (rng !== undefined && unsynced > 0) keep = rng.int(unsynced + 1);
      const survived = file.current.slice(0, file.durableBytes + keep);
      if (tear && rng !== undefined && keep > 0) {
        // Sectors of the unsynced range that were never written back: zeros (a sparse hole).
        const firstSector = Math.floor(file.durableBytes / SECTOR_BYTES) + 1;
        for (let at = firstSector * SECTOR_BYTES; at < survived.length; at += SECTOR_BYTES) {
          if (rng.next() < 0.25) survived.fill(0, at, Math.min(at + SECTOR_BYTES, survived.length));
        }
        const from = Math.max(file.durableBytes, survived.length - 1 - rng.int(16));
        for (let i = from; i < survived.length; i++) survived[i] = rng.int(256);
      }
      file.current = survived;
      file.durableBytes = survived.length;
    }
    // A removal that was never made durable is undone by the crash.
    for (const [path, file] of this.#removedUnsynced) {
      if (!this.#files.has(path)) {
        this.#files.set(path, { ...file, current: file.current.slice(0, file.durableBytes) });
      }
    }
    this.#removedUnsynced.clear();
  }

  /**
   * The disk as one process sees it: every call through the returned adapter fails once the
   * disk has crashed, so a "dead" process cannot keep writing into its successor's files.
   */
  mount(): WalFs {
    const generation = this.generation;
    const check = (): void => {
      if (generation !== this.generation) throw new Error("the process crashed");
    };
    const guard =
      <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A): Promise<R> => {
        try {
          check();
        } catch (error) {
          return Promise.reject(error);
        }
        return fn(...args);
      };
    return {
      mkdirp: guard((dir: string) => this.mkdirp(dir)),
      list: guard((dir: string) => this.list(dir)),
      readFile: guard((path: string) => this.readFile(path)),
      readRange: guard((path: string, offset: number, lengthBytes: number) =>
        this.readRange(path, offset, lengthBytes)
      ),
      openAppend: guard((path: string, create: boolean) => this.openAppend(path, create)),
      truncate: guard((path: string, lengthBytes: number) => this.truncate(path, lengthBytes)),
      remove: guard((path: string) => this.remove(path)),
      syncDir: guard((dir: string) => this.syncDir(dir)),
    };
  }

  /** Test access: the bytes of a file as written so far. */
  bytes(path: string): Uint8Array | undefined {
    return this.#files.get(path)?.current;
  }

  /**
   * Test access: what a crash now would leave, without crashing: the durable prefix of every
   * file whose creation is durable, removed ones whose removal is not included. `serial`
   * names the file itself (a checker may cache what it parsed of it). Views, not copies.
   */
  durableFiles(): Array<{ path: string; serial: number; bytes: Uint8Array }> {
    const out: Array<{ path: string; serial: number; bytes: Uint8Array }> = [];
    for (const [path, file] of this.#files) {
      if (!file.linked) continue;
      out.push({ path, serial: file.serial, bytes: file.current.subarray(0, file.durableBytes) });
    }
    // A removal no directory sync made durable is undone by a crash. (No durably created file
    // can hold its path: the directory sync that links one makes the removal durable too.)
    for (const [path, file] of this.#removedUnsynced) {
      out.push({ path, serial: file.serial, bytes: file.current.subarray(0, file.durableBytes) });
    }
    return out;
  }

  /** Test access: overwrite bytes of a file (durably), to simulate media corruption. */
  corrupt(path: string, offset: number, bytes: Uint8Array): void {
    const file = this.#files.get(path);
    if (file === undefined) throw new Error(`SimDisk.corrupt: no file ${path}`);
    file.current.set(bytes, offset);
    file.durableBytes = Math.max(file.durableBytes, offset + bytes.length);
  }

  mkdirp(dir: string): Promise<void> {
    this.#dirs.add(dir);
    return Promise.resolve();
  }

  list(dir: string): Promise<string[]> {
    const prefix = dir.endsWith("/") ? dir : `${dir}/`;
    const names = [...this.#files.keys()]
      .filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes("/"))
      .map((p) => p.slice(prefix.length));
    return Promise.resolve(names);
  }

  readFile(path: string): Promise<Uint8Array> {
    const file = this.#files.get(path);
    if (file === undefined) return Promise.reject(new Deno.errors.NotFound(path));
    return Promise.resolve(file.current.slice());
  }

  readRange(path: string, offset: number, lengthBytes: number): Promise<Uint8Array> {
    const file = this.#files.get(path);
    if (file === undefined) return Promise.reject(new Deno.errors.NotFound(path));
    return Promise.resolve(file.current.slice(offset, offset + lengthBytes));
  }

  openAppend(path: string, create: boolean): Promise<WalFile> {
    let file = this.#files.get(path);
    if (file === undefined) {
      if (!create) return Promise.reject(new Deno.errors.NotFound(path));
      file = {
        serial: this.#nextSerial++,
        current: new Uint8Array(0),
        durableBytes: 0,
        linked: false,
      };
      this.#files.set(path, file);
    }
    return Promise.resolve(new SimDiskFile(this, file));
  }

  truncate(path: string, lengthBytes: number): Promise<void> {
    const file = this.#files.get(path);
    if (file === undefined) return Promise.reject(new Deno.errors.NotFound(path));
    file.current = file.current.slice(0, lengthBytes);
    file.durableBytes = file.current.length;
    return Promise.resolve();
  }

  remove(path: string): Promise<void> {
    const file = this.#files.get(path);
    if (file === undefined) return Promise.reject(new Deno.errors.NotFound(path));
    this.#files.delete(path);
    if (file.linked) this.#removedUnsynced.set(path, file);
    return Promise.resolve();
  }

  syncDir(dir: string): Promise<void> {
    const fault = this.#fault("dirSync");
    if (fault) return Promise.reject(fault.error);
    // Only the directory's own entries: a subdirectory's files need their own directory sync.
    const prefix = dir.endsWith("/") ? dir : `${dir}/`;
    const inDir = (path: string) =>
      path.startsWith(prefix) && !path.slice(prefix.length).includes("/");
    for (const [path, file] of this.#files) if (inDir(path)) file.linked = true;
    for (const path of [...this.#removedUnsynced.keys()]) {
      if (inDir(path)) this.#removedUnsynced.delete(path);
    }
    return Promise.resolve();
  }

  /** @internal */
  write(file: SimFile, bytes: Uint8Array): Promise<void> {
    this.writes++;
    const fault = this.#fault("write");
    if (fault !== undefined) {
      // A full disk takes what fits first (a short write), then refuses the rest.
      if (fault.kind === "full") this.#append(file, bytes.subarray(0, bytes.length >> 1));
      return Promise.reject(fault.error);
    }
    this.#append(file, bytes);
    return Promise.resolve();
  }

  #append(file: SimFile, bytes: Uint8Array): void {
    const length = file.current.length;
    // Grow by doubling into spare capacity so a long simulated log is not copied per write.
    if (file.current.byteOffset + length + bytes.length > file.current.buffer.byteLength) {
      const grown = new Uint8Array(Math.max(1024, 2 * (length + bytes.length)));
      grown.set(file.current);
      file.current = grown.subarray(0, length);
    }
    file.current = new Uint8Array(
      file.current.buffer,
      file.current.byteOffset,
      length + bytes.length,
    );
    file.current.set(bytes, length);
  }

  /** @internal */
  sync(file: SimFile): Promise<void> {
    this.syncs++;
    const fault = this.#fault("sync");
    if (fault) return Promise.reject(fault.error);
    file.durableBytes = file.current.length;
    return Promise.resolve();
  }
}

class SimDiskFile implements WalFile {
  readonly #disk: SimDisk;
  readonly #file: SimFile;
  readonly #generation: number;
  #closed = false;

  constructor(disk: SimDisk, file: SimFile) {
    this.#disk = disk;
    this.#file = file;
    this.#generation = disk.generation;
  }

  #stale(): Error | undefined {
    if (this.#closed) return new Error("file is closed");
    if (this.#generation !== this.#disk.generation) return new Error("the process crashed");
    return undefined;
  }

  writeAll(bytes: Uint8Array): Promise<void> {
    const stale = this.#stale();
    return stale ? Promise.reject(stale) : this.#disk.write(this.#file, bytes);
  }

  syncData(): Promise<void> {
    const stale = this.#stale();
    return stale ? Promise.reject(stale) : this.#disk.sync(this.#file);
  }

  close(): void {
    this.#closed = true;
  }
}
