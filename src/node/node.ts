/**
 * A hookd node process: the transport, membership, the replicated job store (with its WAL), the
 * delivery engine the store hands its jobs to, and the HTTP API, and their start and stop order.
 *
 * Owns lifecycles only. Flag parsing is src/cli/node.ts; protocols live in their own areas.
 *
 * Start: bind UDP, open (and lock) the WAL and replay it, join membership, start catching up,
 * serve HTTP. Stop (SIGTERM): refuse new submits, let attempts in flight finish (bounded),
 * let their records reach the peers, leave membership gracefully (the others take the jobs
 * over at once), close the WAL and release the data directory.
 */

import { type ApiConfig, apiDefaults } from "../config/api.ts";
import { type DeliveryConfig, deliveryDefaults } from "../config/delivery.ts";
import { type JobsConfig, jobsDefaults } from "../config/jobs.ts";
import {
  MEMBERSHIP_PACKET_BYTES_MIN,
  type MembershipConfig,
  membershipDefaults,
} from "../config/membership.ts";
import { dashboardDefaults } from "../config/dashboard.ts";
import { nodeDefaults } from "../config/node.ts";
import type { TransportConfig } from "../config/transport.ts";
import type { WalConfig } from "../config/wal.ts";
import { MetricsRegistry } from "../metrics/registry.ts";
import { registerProcessMetrics } from "../metrics/process_metrics.ts";
import { randomRng } from "../lib/rng.ts";
import { canonicalAddress, UdpTransport } from "../transport/mod.ts";
import { MembershipService } from "../membership/membership_service.ts";
import { type MemberEvent, SwimCore } from "../membership/swim_core.ts";
import { detectionBoundMs } from "../membership/suspicion_math.ts";
import { JobStore, type MemberRow } from "../jobs/job_store.ts";
import { DashboardRecorder } from "../dashboard/recorder.ts";
import { type ApiServer, type ApiTls, serveApi } from "../api/mod.ts";
import { type HostPort, parseAddress } from "../transport/address.ts";
import { bindUdpSocket } from "../transport/datagram_socket.ts";
import { realRuntime, realTimerCounts, type Runtime } from "../lib/runtime.ts";
import type { WalFs } from "../wal/wal_fs.ts";
import type { DeliveryJob, DeliveryReport } from "../delivery/types.ts";
import { type DeliveryEngine, deliveryEngineFor } from "../delivery/engine.ts";
import { FaultInjector } from "./fault_injection.ts";
import { StallMonitor } from "../lib/stall_monitor.ts";
import { type FaultControlServer, serveFaultControl } from "./fault_control.ts";

export interface NodeOptions {
  nodeId: string;
  /** UDP `host:port` to bind. */
  listen: string;
  /** UDP `host:port` peers reach this node at. @default `listen` */
  advertise?: string;
  /**
   * The cluster's voters: every node's advertised address (this node's may be listed too).
   * Quorum is a majority of these plus this node. They are also the seeds membership joins
   * through.
   */
  peers: readonly string[];
  clusterKey: string;
  /** WAL directory (locked against a second process). */
  dataDir: string;
  /** HTTP API address; undefined: no HTTP API (tests of the lower layers). */
  http?: HostPort;
  tls?: ApiTls;
  apiToken?: string;
  /** Ingress loss injection, passed to the transport. @default 0 */
  lossProbability?: number;
  lossSeed?: number;
  transport?: Partial<TransportConfig>;
  membership?: Partial<MembershipConfig>;
  jobs?: Partial<JobsConfig>;
  wal?: Partial<WalConfig>;
  delivery?: Partial<DeliveryConfig>;
  api?: Partial<ApiConfig>;
  /** Deliver owned jobs (off only for `bench replication`). @default true */
  deliver?: boolean;
  /** How long SIGTERM lets attempts in flight finish, ms. @default 10_000 */
  drainGraceMs?: number;
  onMemberEvent?: (event: MemberEvent) => void;
  /** Job-store events (phase changes, handoffs, catch-up, WAL failure). */
  onLog?: (event: string, fields: Record<string, unknown>) => void;
  /**
   * TEST-ONLY: build a `FaultInjector` (partitions, loss bursts, WAL failures) and serve its
   * control port on loopback (src/node/fault_control.ts). Off in production. @default false
   */
  faultInjection?: boolean;
  /** Every delivery report once the store has it (chaos runs log attempts through it). */
  onReport?: (report: DeliveryReport, job: DeliveryJob) => void;
}

export class Node {
  readonly nodeId: string;
  readonly metrics: MetricsRegistry;
  readonly transport: UdpTransport;
  readonly membership: MembershipService;
  readonly store: JobStore;
  readonly api: ApiServer | undefined;
  readonly voters: readonly string[];
  /** Present only with `faultInjection`. */
  faults: { readonly injector: FaultInjector; readonly control: FaultControlServer } | undefined;
  #stallMonitor: StallMonitor | undefined;
  /** The delivery engine the store hands its jobs to (built when the store opens). */
  #engine: DeliveryEngine | undefined;
  #stopping: Promise<void> | undefined;

  private constructor(
    nodeId: string,
    metrics: MetricsRegistry,
    transport: UdpTransport,
    membership: MembershipService,
    store: JobStore,
    api: ApiServer | undefined,
    voters: readonly string[],
  ) {
    this.nodeId = nodeId;
    this.metrics = metrics;
    this.transport = transport;
    this.membership = membership;
    this.store = store;
    this.api = api;
    this.voters = voters;
  }

  /** Binds the socket, opens the WAL, joins the cluster and serves the API. */
  static async start(options: NodeOptions): Promise<Node> {
    const metrics = new MetricsRegistry();
    const timersArmed = metrics.counter(
      "hookd_runtime_timers_total",
      "Timers the node's shells armed and fired (each fire wakes the event loop)",
      { event: "armed" },
    );
    const timersFired = metrics.counter(
      "hookd_runtime_timers_total",
      "Timers the node's shells armed and fired (each fire wakes the event loop)",
      { event: "fired" },
    );
    metrics.onCollect(() => {
      timersArmed.value = realTimerCounts.armed;
      timersFired.value = realTimerCounts.fired;
    });
    registerProcessMetrics(metrics);
    const injector = options.faultInjection === true
      ? new FaultInjector({ runtime: realRuntime, rng: randomRng(), metrics })
      : undefined;
    // Fault injection filters ingress below the transport: wrap the socket it runs on.
    const listenParsed = parseAddress(options.listen, { allowPortZero: true });
    const socket = injector !== undefined && listenParsed.ok
      ? injector.wrapSocket(bindUdpSocket(listenParsed.value))
      : undefined;
    let transport: UdpTransport;
    try {
      transport = UdpTransport.start({
        nodeId: options.nodeId,
        listen: options.listen,
        ...(socket !== undefined ? { socket } : {}),
        clusterKey: options.clusterKey,
        metrics,
        lossProbability: options.lossProbability ?? 0,
        ...(options.lossSeed !== undefined ? { lossSeed: options.lossSeed } : {}),
        ...(options.transport !== undefined ? { config: options.transport } : {}),
      });
    } catch (error) {
      try {
        socket?.close();
      } catch {
        // The transport closed it already.
      }
      throw error;
    }
    // With port 0 the bound port is only known now; the bound address is the default.
    const advertise = canonicalAddress(options.advertise ?? transport.address);
    const problem = advertise === undefined
      ? `--advertise: bad address ${JSON.stringify(options.advertise)}`
      : /^(0\.0\.0\.0|\[::\]):/.test(advertise)
      ? `--listen ${options.listen} is a wildcard address: pass --advertise HOST:PORT, the address peers reach this node at`
      : undefined;
    if (problem !== undefined || advertise === undefined) {
      await transport.close();
      throw new RangeError(problem);
    }
    const peers: string[] = [];
    for (const p of options.peers) {
      const canonical = canonicalAddress(p);
      if (canonical === undefined) {
        await transport.close();
        throw new RangeError(`peers: bad address ${JSON.stringify(p)}`);
      }
      peers.push(canonical);
    }
    const voters = [...new Set([...peers, advertise])].sort();
    const delivery: DeliveryConfig = { ...deliveryDefaults, ...options.delivery };
    // One API config for the HTTP API and the store: the UDP client path checks submits
    // against the same idempotency-key bound.
    const apiConfig: ApiConfig = { ...apiDefaults, ...options.api };
    let membership: MembershipService | undefined;
    let store: JobStore | undefined;
    let engine: DeliveryEngine | undefined;
    const stallMonitor = new StallMonitor({
      runtime: realRuntime,
      periodMs: nodeDefaults.stallCheckIntervalMs,
      thresholdMs: nodeDefaults.stallThresholdMs,
    });
    stallMonitor.start();
    // The dashboard's series and receiver windows (GET /, /v1/series, /v1/receivers). Its
    // one-second points close at the next wake-up the node makes anyway, within the slack.
    const dashboard = new DashboardRecorder({
      registry: metrics,
      origins: () => engine?.originLoads() ?? [],
      runtime: stallMonitor.lazyRuntime(realRuntime, dashboardDefaults.sampleSlackMs),
    });
    let control: FaultControlServer | undefined;
    try {
      // The membership's, the store's and the engine's timers beat the freeze monitor as they
      // fire, so an idle node does not wake for its beat too.
      const runtime = stallMonitor.beatingRuntime(realRuntime);
      const node = { store: undefined as JobStore | undefined };
      membership = startMembership(
        options,
        transport,
        metrics,
        advertise,
        peers,
        runtime,
        (event) => {
          // The transport retransmits to a silent peer for as long as it holds messages for it;
          // membership is what knows the peer is gone, so it releases them here. A node declared
          // dead by mistake loses nothing that matters: it refutes, and its next session starts
          // under a fresh epoch; anti-entropy brings it what it missed.
          if (event.type === "member-dead" || event.type === "member-left") {
            transport.forgetPeer(event.address);
          }
          node.store?.membershipChanged();
          options.onMemberEvent?.(event);
        },
      );
      const core = membership.core;
      const members = (): MemberRow[] => {
        const rows: MemberRow[] = core.members().map((m) => ({
          nodeId: m.nodeId,
          address: m.address,
          state: m.state,
          incarnation: m.incarnation,
        }));
        if (!rows.some((r) => r.address === advertise)) {
          rows.push({ nodeId: options.nodeId, address: advertise, state: "alive", incarnation: 0 });
        }
        return rows;
      };
      const onLog = options.onLog;
      // One generator for the store and its engine's jitter.
      const rng = randomRng();
      const buildEngine = deliveryEngineFor({
        config: {
          ...delivery,
          maxAttemptsDefault: options.jobs?.maxAttemptsDefault ?? jobsDefaults.maxAttemptsDefault,
        },
        runtime,
        rng,
        metrics,
        onReport: (report, job) => {
          dashboard.onReport(report, job);
          options.onReport?.(report, job);
        },
      });
      store = await JobStore.open({
        self: advertise,
        nodeId: options.nodeId,
        voters,
        dataDir: options.dataDir,
        ...(options.wal !== undefined ? { wal: options.wal } : {}),
        ...(options.jobs !== undefined ? { jobs: options.jobs } : {}),
        ...(injector !== undefined ? { wrapFs: (fs: WalFs) => injector.wrapFs(fs) } : {}),
        scheduler: (wiring) => (engine = buildEngine(wiring)),
        stallMonitor,
        runtime,
        delivery,
        api: apiConfig,
        transport,
        members,
        rng,
        metrics,
        deliver: options.deliver ?? true,
        unheardVoterGraceMs: detectionBoundMs(voters.length, {
          ...membershipDefaults,
          ...options.membership,
        }),
        onLog: (event, fields) => {
          if (event === "wal-failed") {
            // Fail-stop: this node acknowledges nothing more. Leaving the cluster hands its
            // jobs to the others now instead of after a suspicion timeout that never comes
            // (the process still answers probes).
            void membership?.leave();
          }
          onLog?.(event, fields);
        },
      });
      node.store = store;
      store.membershipChanged();
      let api: ApiServer | undefined;
      if (options.http !== undefined) {
        api = serveApi({
          hostname: options.http.hostname,
          port: options.http.port,
          ...(options.tls !== undefined ? { tls: options.tls } : {}),
          ...(options.apiToken !== undefined ? { apiToken: options.apiToken } : {}),
          service: store,
          registry: metrics,
          metrics: () => metrics.renderPrometheus(),
          config: apiConfig,
          jobLimits: {
            ...delivery,
            maxAttemptsMax: options.jobs?.maxAttemptsMax ?? jobsDefaults.maxAttemptsMax,
          },
          dashboard,
        });
      }
      if (injector !== undefined) control = serveFaultControl(injector);
      const created = new Node(options.nodeId, metrics, transport, membership, store, api, voters);
      created.#drainGraceMs = options.drainGraceMs ?? 10_000;
      created.faults = injector !== undefined && control !== undefined
        ? { injector, control }
        : undefined;
      created.#stallMonitor = stallMonitor;
      created.#engine = engine;
      created.#dashboard = dashboard;
      return created;
    } catch (error) {
      dashboard.close();
      membership?.close();
      await store?.close().catch(() => {});
      stallMonitor.close();
      await control?.shutdown();
      await transport.close();
      throw error;
    }
  }

  #drainGraceMs = 10_000;
  #dashboard: DashboardRecorder | undefined;

  get address(): string {
    return this.transport.address;
  }

  /**
   * Graceful stop: refuse submits, finish attempts in flight (up to the drain grace), give
   * their records a moment to reach the peers, leave membership, then close everything.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.store.stopAccepting();
      await this.#engine?.drain(this.#drainGraceMs);
      await this.#replicationSettled(1_000);
      await this.membership.leave();
      await this.api?.shutdown();
      await this.faults?.control.shutdown();
      await this.store.close();
      this.#stallMonitor?.close();
      await this.transport.close();
      this.#dashboard?.close();
    })();
    return this.#stopping;
  }

  /** Waits (bounded) until the transport holds nothing unacknowledged. */
  async #replicationSettled(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!this.transport.isIdle() && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

function startMembership(
  options: NodeOptions,
  transport: UdpTransport,
  metrics: MetricsRegistry,
  advertise: string,
  seeds: readonly string[],
  runtime: Runtime,
  onEvent: (event: MemberEvent) => void,
): MembershipService {
  // Membership packets ride one unreliable transport message each, so they may be no larger
  // than what the transport's datagram size leaves after its header, acks and MAC.
  const packetRoomBytes = transport.endpoint.unreliableBytesMax;
  const packetBytesMax = Math.min(
    options.membership?.packetBytesMax ?? membershipDefaults.packetBytesMax,
    packetRoomBytes,
  );
  if (packetBytesMax < MEMBERSHIP_PACKET_BYTES_MIN) {
    throw new RangeError(
      `transport.datagramBytes ${transport.endpoint.config.datagramBytes} leaves ${packetRoomBytes} bytes ` +
        `for membership packets, which need at least ${MEMBERSHIP_PACKET_BYTES_MIN}`,
    );
  }
  const core = new SwimCore({
    nodeId: options.nodeId,
    address: advertise,
    seeds: seeds.filter((s) => s !== advertise),
    rng: randomRng(),
    nowMs: runtime.nowMs(),
    // A restarted process must outrank its previous life at once: wall-clock seconds grow
    // across restarts (a refutation still fixes it if the clock went backwards).
    incarnation: Math.floor(Date.now() / 1000),
    metrics,
    config: { ...options.membership, packetBytesMax },
  });
  // Membership is the voter set: only voters' authenticated addresses may speak SWIM.
  const senders = new Set([...seeds, advertise]);
  const service = new MembershipService({ core, transport, metrics, onEvent, senders, runtime });
  service.start();
  return service;
}
