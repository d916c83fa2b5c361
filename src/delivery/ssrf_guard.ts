/**
 * SSRF guard: refuses delivery targets that are not http(s) or that resolve to loopback,
 * private, link-local, unspecified or other special-purpose addresses, unless private
 * targets are explicitly allowed (`--allow-private-targets`; tests and benchmarks).
 *
 * Owns address classification (pure) and the target check, whose DNS resolver is injected
 * (`Deno.resolveDns` in production). Must not open connections.
 *
 * The check returns the address it judged (`resolveTarget`), and the HTTP transport connects
 * to exactly that address (http_transport.ts, pinned_relay.ts): the name is never resolved a
 * second time, so a DNS answer that changes after the check (rebinding) cannot steer a
 * delivery to an address nobody checked. `Deno.resolveDns` asks the configured DNS servers
 * and ignores /etc/hosts; since the connection goes where the check looked, both agree.
 */

import { err, ok, type Result } from "../lib/result.ts";

/** Returns every A and AAAA address of `hostname`; gives up when `signal` aborts. */
export type Resolver = (hostname: string, signal?: AbortSignal) => Promise<string[]>;

/** `Deno.resolveDns` for A and AAAA; a name with neither is an error. */
export const denoResolver: Resolver = async (hostname, signal) => {
  const options = signal !== undefined ? { signal } : {};
  const [v4, v6] = await Promise.allSettled([
    Deno.resolveDns(hostname, "A", options),
    Deno.resolveDns(hostname, "AAAA", options),
  ]);
  const addresses = [
    ...(v4.status === "fulfilled" ? v4.value : []),
    ...(v6.status === "fulfilled" ? v6.value : []),
  ];
  if (addresses.length === 0) {
    const reason = v4.status === "rejected" ? v4.reason : undefined;
    throw new Error(
      `cannot resolve ${hostname}: ${
        reason instanceof Error ? reason.message : "no A/AAAA record"
      }`,
    );
  }
  return addresses;
};

/** Parses dotted-quad IPv4; undefined if `text` is not exactly that. */
export function parseIpv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const out: number[] = [];
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    out.push(n);
  }
  return out;
}

/** Parses IPv6 (with `::`, an embedded IPv4 tail, an optional zone) into 8 16-bit groups. */
export function parseIpv6(text: string): number[] | undefined {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (!s.includes(":")) return undefined;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  const last = s.slice(lastColon + 1);
  if (last.includes(".")) {
    const v4 = parseIpv4(last);
    if (v4 === undefined) return undefined;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    s = s.slice(0, lastColon + 1) + "0:0";
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const parseGroups = (h: string): number[] | undefined => {
    if (h === "") return [];
    const groups: number[] = [];
    for (const g of h.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      groups.push(parseInt(g, 16));
    }
    return groups;
  };
  const head = parseGroups(halves[0]!);
  const rest = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (head === undefined || rest === undefined) return undefined;
  let groups: number[];
  if (halves.length === 2) {
    const missing = 8 - head.length - rest.length;
    if (missing < 1) return undefined;
    groups = [...head, ...new Array<number>(missing).fill(0), ...rest];
  } else {
    groups = head;
  }
  if (groups.length !== 8) return undefined;
  if (tail.length === 2) {
    groups[6] = tail[0]!;
    groups[7] = tail[1]!;
  }
  return groups;
}

function inV4(a: number[], prefix: [number, number, number, number], bits: number): boolean {
  const ip = ((a[0]! << 24) | (a[1]! << 16) | (a[2]! << 8) | a[3]!) >>> 0;
  const net = ((prefix[0] << 24) | (prefix[1] << 16) | (prefix[2] << 8) | prefix[3]) >>> 0;
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return ((ip & mask) >>> 0) === ((net & mask) >>> 0);
}

const V4_SPECIAL: ReadonlyArray<[[number, number, number, number], number, string]> = [
  [[0, 0, 0, 0], 8, "unspecified/this-network"],
  [[10, 0, 0, 0], 8, "private"],
  [[100, 64, 0, 0], 10, "carrier-grade NAT"],
  [[127, 0, 0, 0], 8, "loopback"],
  [[169, 254, 0, 0], 16, "link-local"],
  [[172, 16, 0, 0], 12, "private"],
  [[192, 0, 0, 0], 24, "IETF protocol assignments"],
  [[192, 0, 2, 0], 24, "documentation"],
  [[192, 88, 99, 0], 24, "6to4 relay"],
  [[192, 168, 0, 0], 16, "private"],
  [[198, 18, 0, 0], 15, "benchmarking"],
  [[198, 51, 100, 0], 24, "documentation"],
  [[203, 0, 113, 0], 24, "documentation"],
  [[224, 0, 0, 0], 4, "multicast"],
  [[240, 0, 0, 0], 4, "reserved/broadcast"],
];

function classifyV4(a: number[]): string | undefined {
  for (const [prefix, bits, label] of V4_SPECIAL) if (inV4(a, prefix, bits)) return label;
  return undefined;
}

function embeddedV4(g: number[], hi: number, lo: number): number[] {
  return [g[hi]! >> 8, g[hi]! & 0xff, g[lo]! >> 8, g[lo]! & 0xff];
}

function classifyV6(g: number[]): string | undefined {
  const allZeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (allZeroUpTo(8)) return "unspecified";
  if (allZeroUpTo(7) && g[7] === 1) return "loopback";
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (deprecated compatible): judge the IPv4 inside.
  if (allZeroUpTo(5) && (g[5] === 0xffff || g[5] === 0)) {
    const inner = classifyV4(embeddedV4(g, 6, 7));
    return inner === undefined ? undefined : `IPv4-mapped ${inner}`;
  }
  // ::ffff:0:a.b.c.d (IPv4-translated, RFC 2765/6052) likewise.
  if (allZeroUpTo(4) && g[4] === 0xffff && g[5] === 0) {
    const inner = classifyV4(embeddedV4(g, 6, 7));
    return inner === undefined ? undefined : `IPv4-translated ${inner}`;
  }
  // NAT64 (64:ff9b::/96) carries an IPv4 address too.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const inner = classifyV4(embeddedV4(g, 6, 7));
    return inner === undefined ? undefined : `NAT64 ${inner}`;
  }
  // Local-use NAT64 (64:ff9b:1::/48, RFC 8215) translates into the operator's own network.
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return "local-use NAT64";
  if (g[0] === 0x2002) {
    const inner = classifyV4(embeddedV4(g, 1, 2));
    return inner === undefined ? undefined : `6to4 ${inner}`;
  }
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return "unique local (private)";
  if ((first & 0xffc0) === 0xfe80) return "link-local";
  if ((first & 0xffc0) === 0xfec0) return "site-local";
  if ((first & 0xff00) === 0xff00) return "multicast";
  if (first === 0x2001 && g[1] === 0x0db8) return "documentation";
  // 3fff::/20 (RFC 9637): 3fff:0000:: to 3fff:0fff:ffff:...
  if (first === 0x3fff && g[1]! <= 0x0fff) return "documentation";
  if (first === 0x2001 && g[1] === 0) return "Teredo";
  if (first === 0x2001 && g[1] === 2 && g[2] === 0) return "benchmarking";
  // ORCHID (2001:10::/28) and ORCHIDv2 (2001:20::/28): identifiers, not routable addresses.
  if (first === 0x2001 && (g[1]! & 0xfff0) === 0x10) return "ORCHID";
  if (first === 0x2001 && (g[1]! & 0xfff0) === 0x20) return "ORCHIDv2";
  if (first === 0x5f00) return "SRv6 SID";
  if (first === 0x0100 && g.slice(1, 4).every((x) => x === 0)) return "discard-only";
  return undefined;
}

/**
 * Why `address` (an IP literal) must not be a delivery target, or undefined when it is a
 * public address. Unparseable text is refused too.
 */
export function specialAddressReason(address: string): string | undefined {
  const v4 = parseIpv4(address);
  if (v4 !== undefined) return classifyV4(v4);
  const v6 = parseIpv6(address);
  if (v6 !== undefined) return classifyV6(v6);
  return "not an IP address";
}

/** Why a target was refused; `permanent: false` (DNS failure) is worth a retry. */
export interface TargetRefusal {
  permanent: boolean;
  message: string;
}

export interface TargetCheckOptions {
  allowPrivateTargets: boolean;
  resolve: Resolver;
}

/**
 * Checks a delivery URL. Scheme first (always), then, unless private targets are allowed,
 * every address the host resolves to. The message is a sentence fit for an attempt record.
 */
export async function checkTarget(
  rawUrl: string,
  options: TargetCheckOptions,
): Promise<Result<URL, TargetRefusal>> {
  const checked = await resolveTarget(rawUrl, options);
  return checked.ok ? ok(checked.value.url) : checked;
}

/** A target that passed the check, and the address a connection to it must use. */
export interface CheckedTarget {
  readonly url: URL;
  /**
   * The resolved address that was judged, to connect to instead of the name; undefined when
   * the URL names an IP literal (nothing to resolve) or private targets are allowed (nothing
   * judged).
   */
  readonly address: string | undefined;
}

/** `checkTarget`, also returning the checked address to pin the connection to. */
export async function resolveTarget(
  rawUrl: string,
  options: TargetCheckOptions,
): Promise<Result<CheckedTarget, TargetRefusal>> {
  const scheme = checkScheme(rawUrl);
  if (!scheme.ok) return err({ permanent: true, message: scheme.reason });
  const url = scheme.value;
  if (options.allowPrivateTargets) return ok({ url, address: undefined });
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (parseIpv4(host) !== undefined || parseIpv6(host) !== undefined) {
    const why = specialAddressReason(host);
    return why === undefined ? ok({ url, address: undefined }) : err(refusal(url, host, why));
  }
  const name = host.toLowerCase().replace(/\.$/, "");
  if (name === "localhost" || name.endsWith(".localhost")) {
    return err(refusal(url, name, "loopback"));
  }
  let addresses: string[];
  try {
    addresses = await options.resolve(name);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return err({ permanent: false, message: `cannot resolve ${name}: ${message}` });
  }
  if (addresses.length === 0) {
    return err({ permanent: false, message: `cannot resolve ${name}: no addresses` });
  }
  for (const address of addresses) {
    const why = specialAddressReason(address);
    if (why !== undefined) return err(refusal(url, `${name} (${address})`, why));
  }
  // Every address passed; connect to the first (IPv4 first: the resolver lists A before AAAA).
  return ok({ url, address: addresses[0]! });
}

/** The scheme check alone (synchronous): an absolute http or https URL. */
export function checkScheme(rawUrl: string): Result<URL> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return err(`target ${JSON.stringify(rawUrl.slice(0, 200))} is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return err(`target scheme ${url.protocol} is not allowed (only http and https)`);
  }
  return ok(url);
}

function refusal(url: URL, host: string, why: string): TargetRefusal {
  const message = `target ${url.origin} resolves to ${host}, a ${why} address; ` +
    "private targets are refused unless the node runs with --allow-private-targets";
  return { permanent: true, message };
}
