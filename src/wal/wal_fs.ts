/**
 * The file-system adapter the WAL writes through, and its Deno implementation.
 *
 * Owns nothing but the mapping to `Deno` file APIs (the stand-in for `@std/fs`). The WAL never
 * touches `Deno` directly, so tests inject write and fsync failures and the simulator swaps in
 * a disk that loses unsynced writes on a crash (src/sim/disk.ts).
 */

export interface WalFile {
  /** Appends all of `bytes` at the end of the file. */
  writeAll(bytes: Uint8Array): Promise<void>;
  /** Makes every byte written so far durable (fdatasync). */
  syncData(): Promise<void>;
  close(): void;
}

export interface WalFs {
  mkdirp(dir: string): Promise<void>;
  /** Names (not paths) of the regular files in `dir`. */
  list(dir: string): Promise<string[]>;
  readFile(path: string): Promise<Uint8Array>;
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

class DenoWalFile implements WalFile {
  readonly #file: Deno.FsFile;

  constructor(file: Deno.FsFile) {
    this.#file = file;
  }

  async writeAll(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      offset += await this.#file.write(bytes.subarray(offset));
    }
  }

  syncData(): Promise<void> {
    return this.#file.syncData();
  }

  close(): void {
    this.#file.close();
  }
}

export const denoWalFs: WalFs = {
  async mkdirp(dir) {
    await Deno.mkdir(dir, { recursive: true });
  },
  async list(dir) {
    const names: string[] = [];
    for await (const entry of Deno.readDir(dir)) if (entry.isFile) names.push(entry.name);
    return names;
  },
  readFile(path) {
    return Deno.readFile(path);
  },
  async openAppend(path, create) {
    const file = await Deno.open(path, { append: true, create, createNew: false, read: false });
    return new DenoWalFile(file);
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
  async syncDir(dir) {
    const handle = await Deno.open(dir, { read: true });
    try {
      await handle.sync();
    } finally {
      handle.close();
    }
  },
};
