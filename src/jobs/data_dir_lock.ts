/**
 * One process per data directory: `--data DIR` is locked with an exclusive advisory lock
 * (flock) on `DIR/LOCK` for the life of the node, so a second process pointed at the same
 * directory fails at once with a clear error instead of interleaving writes with the first
 * and corrupting its WAL. The kernel drops the lock when the process dies (kill -9 included),
 * so a crash never leaves a stale lock behind.
 *
 * Owns the lock file only.
 */

export interface DataDirLock {
  release(): void;
}

export class DataDirLockedError extends Error {
  override name = "DataDirLockedError";
}

export async function lockDataDir(dir: string): Promise<DataDirLock> {
  await Deno.mkdir(dir, { recursive: true });
  const path = `${dir.replace(/\/+$/, "")}/LOCK`;
  const file = await Deno.open(path, { create: true, read: true, write: true });
  let locked: boolean;
  try {
    locked = await file.tryLock(true);
  } catch (error) {
    file.close();
    throw error;
  }
  if (!locked) {
    file.close();
    throw new DataDirLockedError(
      `data directory ${dir} is in use by another hookd process (${path} is locked); ` +
        "each node needs its own --data directory",
    );
  }
  // Say who holds it, for a person looking at the directory.
  await file.truncate(0);
  await file.write(new TextEncoder().encode(`${Deno.pid}\n`));
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      try {
        file.unlockSync();
      } finally {
        file.close();
      }
    },
  };
}
