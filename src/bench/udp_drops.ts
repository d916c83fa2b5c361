/**
 * Datagrams the kernel dropped at one UDP socket because its receive buffer was full: the loss
 * a sender causes itself by bursting past a receiver's pace, as opposed to loss injected on
 * purpose (`--loss`).
 *
 * Owns reading Linux's /proc/net/udp (and udp6), whose last column counts drops per socket.
 * Deno lets only `--allow-all` read /proc, which `hookd` does not ask for, so the tables are
 * read through `cat` (`--allow-run`) when a direct read is refused. Elsewhere, or when neither
 * works, the count is undefined, never a made-up 0.
 */

/** Drops counted so far at the socket bound to `port` (any local address), or undefined. */
export function udpSocketDrops(port: number): number | undefined {
  let found: number | undefined;
  for (const table of ["/proc/net/udp", "/proc/net/udp6"]) {
    const text = readTable(table);
    if (text === undefined) continue;
    const drops = parseDrops(text, port);
    if (drops !== undefined) found = (found ?? 0) + drops;
  }
  return found;
}

function readTable(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    // Refused (or absent): try the same through a child process.
  }
  try {
    const out = new Deno.Command("cat", { args: [path], stdout: "piped", stderr: "null" })
      .outputSync();
    return out.success ? new TextDecoder().decode(out.stdout) : undefined;
  } catch {
    return undefined;
  }
}

/** The drops of the sockets bound to `port` in one /proc/net/udp table, or undefined. */
export function parseDrops(table: string, port: number): number | undefined {
  const portHex = port.toString(16).toUpperCase().padStart(4, "0");
  let total: number | undefined;
  for (const line of table.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    const drops = fields[fields.length - 1];
    if (local === undefined || drops === undefined || fields.length < 13) continue;
    if (local.split(":")[1] !== portHex) continue;
    const n = Number(drops);
    if (Number.isInteger(n) && n >= 0) total = (total ?? 0) + n;
  }
  return total;
}
