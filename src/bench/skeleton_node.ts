/**
 * `hookd bench skeleton-node`: one node of the skeleton cluster behind
 * `hookd bench --rates … --skeleton`. It does a job's necessary work in hookd's design, on the
 * primitives hookd uses, and nothing else:
 * - the submit's HTTP request in (`Deno.serve`), its JSON parsed and its url checked;
 * - the job to each peer in a sealed datagram (the transport's ChaCha20-Poly1305), entries for
 *   one peer packed together per event-loop turn up to the datagram size (skeleton_wire.ts);
 * - one log write and one inline `fdatasync` per node per turn (group commit, as hookd's WAL
 *   with its default inline fsync), sent datagrams first so peers work while this one waits;
 * - a replica's VOTE once the job is on its disk; the 202 once the coordinator and a majority
 *   hold it;
 * - the delivery: a signed POST (Standard Webhooks headers) through hookd's own HTTP/1.1
 *   client, then a DONE to every peer, written with no fsync of its own (the next one takes it).
 *
 * It leaves out all that makes hookd reliable: no acks or retransmission (a lost datagram
 * loses a vote, and its submit is answered 503 after `SUBMIT_WAIT_MS_MAX`), no membership, no
 * retries, no recovery, no admission control, and no timer but the delivery's timeout. So it
 * is an instrument, never a product: what
 * this runtime on this machine charges for a job's necessary work, measured the same way as
 * hookd by the same sweep. The sweep runs it at loss 0 only.
 *
 * Owns the skeleton node's I/O and state; the wire format is skeleton_wire.ts. It must not be
 * used for anything but measuring.
 */

import { setImmediate } from "node:timers";
import { type CommandSpec, listFlag, numberFlag, stringFlag, UsageError } from "../process/args.ts";
import { EXIT_OK, type LeafCommand } from "../process/command.ts";
import { listenForStopSignal, printJsonLine } from "../process/process_io.ts";
import { formatAddress, type HostPort, parseAddress } from "../transport/address.ts";
import { clusterKeyFrom } from "../transport/auth.ts";
import { ClusterKeyring } from "../transport/datagram_crypto.ts";
import { bindUdpSocket, type DatagramSocket } from "../transport/datagram_socket.ts";
import { assert } from "../lib/assert.ts";
import { Http1Client } from "../delivery/http1_client.ts";
import { generateSecret, webhookHeaders } from "../delivery/signing.ts";
import {
  encodeEntry,
  logRecords,
  packEntries,
  SKELETON_OVERHEAD_BYTES,
  SkeletonOpener,
  SkeletonSealer,
} from "./skeleton_wire.ts";

export interface SkeletonNodeOptions {
  /** This node's place in `addresses`. */
  readonly index: number;
  /** Every node's UDP address, this one's included, in index order. */
  readonly addresses: readonly HostPort[];
  readonly http: HostPort;
  readonly dataDir: string;
  readonly clusterKey: string;
  readonly datagramBytes: number;
  /** The secret deliveries are signed with. @default a fresh one */
  readonly signingSecret?: string;
}

/** One job the coordinator waits on: its own fsync and a majority's votes. */
interface Waiting {
  /** The replicas that voted, one bit per node index: a vote heard twice counts once. */
  voters: number;
  durableHere: boolean;
  readonly sinceMs: number;
  readonly resolve: (held: boolean) => void;
}

/** A submitted job as the coordinator delivers it. */
interface Job {
  readonly id: string;
  readonly url: URL;
  readonly body: string;
}

const encoder = new TextEncoder();
/** Most nodes: a job's voters are bits of one 32-bit integer. */
const NODES_MAX = 31;
const DELIVERY_TIMEOUT_MS = 10_000;
/**
 * A submit whose majority has not come in this long is answered 503 (a lost datagram: the
 * skeleton never retransmits). Checked at most once a second, at a flush, so that the
 * skeleton arms no timer per job.
 */
const SUBMIT_WAIT_MS_MAX = 5_000;

/** A running skeleton node (the command runs one; tests may run several in one process). */
export class SkeletonNode {
  readonly #options: SkeletonNodeOptions;
  readonly #socket: DatagramSocket;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #log: Deno.FsFile;
  readonly #sealer: SkeletonSealer;
  readonly #opener: SkeletonOpener;
  readonly #client = new Http1Client({ bodyBytesMax: 4_096 });
  readonly #secret: string;
  readonly #majority: number;
  /** Encoded entries for each peer (by index), sent at the end of the turn. */
  readonly #outbox: Uint8Array[][];
  /** Entries for the log this turn; `#syncNeeded` when one of them is a SUBMIT. */
  #logQueue: Uint8Array[] = [];
  #syncNeeded = false;
  /** SUBMITs written this turn, with the coordinator each one's VOTE goes to (-1: here). */
  #durableAfterSync: Array<{ id: string; coordinator: number }> = [];
  readonly #waiting = new Map<string, Waiting>();
  #flushScheduled = false;
  #lastExpiryMs = 0;
  #closed = false;
  readonly #receiving: Promise<void>;
  readonly counters = { fsyncs: 0, appends: 0, datagramsOut: 0, datagramsIn: 0, dropped: 0 };
  readonly url: string;

  private constructor(options: SkeletonNodeOptions, log: Deno.FsFile) {
    this.#options = options;
    this.#log = log;
    this.#secret = options.signingSecret ?? generateSecret();
    assert(options.addresses.length <= NODES_MAX, `${options.addresses.length} skeleton nodes`);
    this.#majority = Math.floor(options.addresses.length / 2) + 1;
    this.#outbox = options.addresses.map(() => []);
    const keyring = new ClusterKeyring(options.clusterKey);
    this.#sealer = new SkeletonSealer(keyring, options.index);
    this.#opener = new SkeletonOpener(keyring);
    this.#socket = bindUdpSocket(options.addresses[options.index]!);
    this.#server = Deno.serve(
      { hostname: options.http.hostname, port: options.http.port, onListen: () => {} },
      (request) => this.#handle(request),
    );
    this.url = `http://${formatAddress(this.#server.addr.hostname, this.#server.addr.port)}`;
    this.#receiving = this.#receive();
  }

  static async start(options: SkeletonNodeOptions): Promise<SkeletonNode> {
    await Deno.mkdir(options.dataDir, { recursive: true });
    const log = await Deno.open(`${options.dataDir}/skeleton.log`, {
      append: true,
      create: true,
    });
    return new SkeletonNode(options, log);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const waiting of this.#waiting.values()) waiting.resolve(false);
    this.#waiting.clear();
    this.#socket.close();
    await this.#receiving;
    await this.#server.shutdown();
    this.#client.close();
    this.#log.close();
  }

  async #handle(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (request.method === "POST" && path === "/v1/jobs") return await this.#submit(request);
    if (request.method === "GET" && path === "/readyz") return new Response("ready\n");
    if (request.method === "GET" && path === "/metrics") return new Response(this.#metrics());
    return Response.json({ error: { code: "not_found" } }, { status: 404 });
  }

  async #submit(request: Request): Promise<Response> {
    let job: Job;
    try {
      const parsed = JSON.parse(await request.text()) as { url?: unknown; payload?: unknown };
      if (typeof parsed.url !== "string") throw new Error("url must be a string");
      job = {
        id: crypto.randomUUID(),
        url: new URL(parsed.url),
        body: JSON.stringify(parsed.payload ?? null),
      };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return Response.json({ error: { code: "invalid", message } }, { status: 400 });
    }
    const entry = encodeEntry({
      kind: "submit",
      id: job.id,
      body: encoder.encode(`${job.url.href}\n${job.body}`),
    });
    if (entry.length > this.#options.datagramBytes - SKELETON_OVERHEAD_BYTES) {
      return Response.json({ error: { code: "too_large" } }, { status: 413 });
    }
    const held = new Promise<boolean>((resolve) => {
      this.#waiting.set(job.id, {
        voters: 0,
        durableHere: false,
        sinceMs: performance.now(),
        resolve,
      });
    });
    for (let peer = 0; peer < this.#outbox.length; peer++) {
      if (peer !== this.#options.index) this.#outbox[peer]!.push(entry);
    }
    this.#append(entry, true, { id: job.id, coordinator: -1 });
    if (!await held) return Response.json({ error: { code: "no_quorum" } }, { status: 503 });
    void this.#deliver(job);
    return Response.json({ id: job.id }, { status: 202 });
  }

  async #deliver(job: Job): Promise<void> {
    const headers = webhookHeaders(
      [this.#secret],
      job.id,
      Math.floor(Date.now() / 1000),
      job.body,
    );
    try {
      const response = await this.#client.post({
        hostname: job.url.hostname,
        port: Number(job.url.port || (job.url.protocol === "https:" ? 443 : 80)),
        host: job.url.host,
        target: `${job.url.pathname}${job.url.search}`,
        headers: [["content-type", "application/json"], ...Object.entries(headers)],
        body: job.body,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      if (response.status < 200 || response.status > 299) {
        console.error(`skeleton: ${job.id} answered ${response.status}; no retry here`);
        return;
      }
    } catch (error) {
      console.error(`skeleton: ${job.id} not delivered (${error}); no retry here`);
      return;
    }
    const done = encodeEntry({ kind: "done", id: job.id });
    for (let peer = 0; peer < this.#outbox.length; peer++) {
      if (peer !== this.#options.index) this.#outbox[peer]!.push(done);
    }
    this.#append(done, false);
  }

  #append(entry: Uint8Array, sync: boolean, durable?: { id: string; coordinator: number }) {
    this.#logQueue.push(entry);
    this.counters.appends++;
    if (sync) this.#syncNeeded = true;
    if (durable !== undefined) this.#durableAfterSync.push(durable);
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || this.#closed) return;
    this.#flushScheduled = true;
    // After the turn's microtasks: everything this turn made leaves in one batch.
    setImmediate(() => this.#flush());
  }

  /** The turn's datagrams, then its log write and fsync, then what that fsync made durable. */
  #flush(): void {
    this.#flushScheduled = false;
    if (this.#closed) return;
    this.#sendOutbox();
    if (this.#logQueue.length > 0) {
      this.#writeAll(logRecords(this.#logQueue));
      this.#logQueue = [];
      if (this.#syncNeeded) {
        this.#log.syncDataSync();
        this.counters.fsyncs++;
        this.#syncNeeded = false;
      }
    }
    const durable = this.#durableAfterSync;
    this.#durableAfterSync = [];
    for (const { id, coordinator } of durable) {
      if (coordinator < 0) this.#count(id, this.#options.index);
      else this.#outbox[coordinator]!.push(encodeEntry({ kind: "vote", id }));
    }
    this.#sendOutbox();
    this.#expireWaits(performance.now());
  }

  #writeAll(bytes: Uint8Array): void {
    let offset = 0;
    while (offset < bytes.length) offset += this.#log.writeSync(bytes.subarray(offset));
  }

  #sendOutbox(): void {
    const payloadMax = this.#options.datagramBytes - SKELETON_OVERHEAD_BYTES;
    for (let peer = 0; peer < this.#outbox.length; peer++) {
      const entries = this.#outbox[peer]!;
      if (entries.length === 0) continue;
      this.#outbox[peer] = [];
      for (const batch of packEntries(entries, payloadMax)) {
        this.counters.datagramsOut++;
        this.#socket.send(this.#sealer.seal(batch), this.#options.addresses[peer]!).catch(() => {
          this.counters.dropped++;
        });
      }
    }
  }

  /** A vote from a replica or this node's own fsync; the submit answers at a majority. */
  #count(id: string, from: number): void {
    const waiting = this.#waiting.get(id);
    if (waiting === undefined) return; // answered already, or given up
    if (from === this.#options.index) {
      waiting.durableHere = true;
    } else {
      waiting.voters |= 1 << from;
    }
    if (waiting.durableHere && bitCount(waiting.voters) + 1 >= this.#majority) {
      this.#waiting.delete(id);
      waiting.resolve(true);
    }
  }

  /** Answers the submits that waited past `SUBMIT_WAIT_MS_MAX` (oldest first in the map). */
  #expireWaits(nowMs: number): void {
    if (nowMs - this.#lastExpiryMs < 1_000) return;
    this.#lastExpiryMs = nowMs;
    for (const [id, waiting] of this.#waiting) {
      if (nowMs - waiting.sinceMs < SUBMIT_WAIT_MS_MAX) break;
      this.#waiting.delete(id);
      waiting.resolve(false);
    }
  }

  async #receive(): Promise<void> {
    const buffer = new Uint8Array(65_536);
    while (!this.#closed) {
      let data: Uint8Array;
      try {
        [data] = await this.#socket.receive(buffer);
      } catch {
        if (this.#closed) return;
        continue;
      }
      this.counters.datagramsIn++;
      const opened = this.#opener.open(data);
      // A datagram that names this node or no node as its sender is not a peer's.
      if (
        opened === undefined || opened.from >= this.#outbox.length ||
        opened.from === this.#options.index
      ) {
        this.counters.dropped++;
        continue;
      }
      for (const entry of opened.entries) {
        if (entry.kind === "vote") {
          this.#count(entry.id, opened.from);
        } else {
          const bytes = encodeEntry(entry);
          if (entry.kind === "submit") {
            this.#append(bytes, true, { id: entry.id, coordinator: opened.from });
          } else {
            this.#append(bytes, false);
          }
        }
      }
    }
  }

  /** The counters under hookd's own metric names, so the sweep's rows read them alike. */
  #metrics(): string {
    const c = this.counters;
    return [
      `hookd_wal_fsyncs_total ${c.fsyncs}`,
      `hookd_wal_appends_total ${c.appends}`,
      `hookd_transport_datagrams_total{direction="out"} ${c.datagramsOut}`,
      `hookd_transport_datagrams_total{direction="in"} ${c.datagramsIn}`,
      `hookd_skeleton_datagrams_dropped_total ${c.dropped}`,
      "",
    ].join("\n");
  }
}

const spec: CommandSpec = {
  name: "bench skeleton-node",
  summary: "One node of the skeleton cluster (hookd bench --rates … --skeleton starts them): " +
    "a job's necessary work and nothing else, a measuring instrument",
  flags: {
    index: { type: "string", valueName: "I", help: "This node's place in --addresses (0-based)" },
    addresses: {
      type: "string",
      valueName: "H:P,…",
      help: "Every node's UDP address, in index order",
    },
    http: { type: "string", valueName: "H:P", help: "HTTP listen address", default: "127.0.0.1:0" },
    "data-dir": { type: "string", valueName: "DIR", help: "Where the log goes" },
    "cluster-key": { type: "string", valueName: "KEY", help: "Else HOOKD_CLUSTER_KEY" },
    "datagram-bytes": {
      type: "string",
      valueName: "N",
      help: "Largest datagram",
      default: "1400",
    },
  },
};

export const skeletonNodeCommand: LeafCommand = {
  spec,
  async run(args) {
    const addresses = listFlag(args.values, "addresses").map((a) => {
      const parsed = parseAddress(a);
      if (!parsed.ok) throw new UsageError(`--addresses: ${parsed.reason}`);
      return parsed.value;
    });
    if (addresses.length === 0) throw new UsageError("--addresses is required");
    if (addresses.length > NODES_MAX) {
      throw new UsageError(`--addresses: at most ${NODES_MAX} nodes, got ${addresses.length}`);
    }
    const index = numberFlag(args.values, "index", 0, {
      min: 0,
      max: addresses.length - 1,
      integer: true,
    });
    const http = parseAddress(stringFlag(args.values, "http") ?? "127.0.0.1:0", {
      allowPortZero: true,
    });
    if (!http.ok) throw new UsageError(`--http: ${http.reason}`);
    const dataDir = stringFlag(args.values, "data-dir");
    if (dataDir === undefined) throw new UsageError("--data-dir is required");
    const clusterKey = clusterKeyFrom(stringFlag(args.values, "cluster-key"));
    if (clusterKey === undefined) throw new UsageError("a cluster key is required");
    const node = await SkeletonNode.start({
      index,
      addresses,
      http: http.value,
      dataDir,
      clusterKey,
      datagramBytes: numberFlag(args.values, "datagram-bytes", 1400, {
        min: 512,
        max: 65_000,
        integer: true,
      }),
    });
    printJsonLine({ listening: node.url.slice("http://".length) });
    const stop = listenForStopSignal();
    await stop.received;
    stop.dispose();
    await node.close();
    return EXIT_OK;
  },
};

/** Set bits of a 32-bit integer: the replicas that voted. */
function bitCount(bits: number): number {
  let count = 0;
  for (let rest = bits >>> 0; rest !== 0; rest &= rest - 1) count++;
  return count;
}
