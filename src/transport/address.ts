/**
 * `"host:port"` peer addresses: parsing and the canonical form used as session keys.
 *
 * Owns only the string format. IPv6 literals are written `[::1]:7000`. `localhost` is mapped
 * to 127.0.0.1 because replies are keyed by the address the socket reports, which is numeric;
 * other names are not resolved (peers are configured by IP).
 */

import { err, ok, type Result } from "../lib/result.ts";

export interface HostPort {
  hostname: string;
  port: number;
}

/** Parses `"host:port"`; port 0 (any free port) only with `allowPortZero`, for binding. */
export function parseAddress(
  address: string,
  options: { allowPortZero?: boolean } = {},
): Result<HostPort> {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s\[\]]+)):(\d{1,5})$/.exec(address);
  if (m === null) return err(`not a "host:port" address: ${JSON.stringify(address)}`);
  const port = Number(m[3]);
  if (port < (options.allowPortZero ? 0 : 1) || port > 65535) {
    return err(`port out of range in ${JSON.stringify(address)}`);
  }
  let hostname = (m[1] ?? m[2])!;
  if (hostname === "localhost") hostname = "127.0.0.1";
  return ok({ hostname, port });
}

/** The canonical string for a socket address, as session keys use it. */
export function formatAddress(hostname: string, port: number): string {
  return hostname.includes(":") ? `[${hostname}]:${port}` : `${hostname}:${port}`;
}

/** `address` in canonical form, or undefined when it does not parse. */
export function canonicalAddress(address: string): string | undefined {
  const parsed = parseAddress(address);
  return parsed.ok ? formatAddress(parsed.value.hostname, parsed.value.port) : undefined;
}
