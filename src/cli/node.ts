/**
 * `hookd node`: runs one cluster member until SIGTERM/SIGINT. It prints where it listens, then
 * membership and job-store events as JSON lines on stdout (`{"event":"member-dead",...}`).
 *
 * Owns flag parsing and the signal wiring only; the node itself is src/node/node.ts.
 */

import { listenForProfileSignal } from "../node/cpu_profiler.ts";
import { transportFlags, transportOptionsFromFlags } from "./transport_flags.ts";
import {
  booleanFlag,
  type FlagValues,
  listFlag,
  numberFlag,
  stringFlag,
  UsageError,
} from "../process/args.ts";
import { EXIT_FAILURE, EXIT_OK, type LeafCommand } from "../process/command.ts";
import { listenForStopSignal, printJsonLine } from "../process/process_io.ts";
import { Node, type NodeOptions } from "../node/node.ts";
import { API_TOKEN_CHARS_MIN, type ApiTls, apiTokenProblem, loadTlsFiles } from "../api/mod.ts";
import { parseAddress } from "../transport/address.ts";
import { apiDefaults } from "../config/api.ts";
import { jobsDefaults } from "../config/jobs.ts";
import { walDefaults } from "../config/wal.ts";
import { DataDirLockedError } from "../jobs/data_dir_lock.ts";
import { WalCorruptionError } from "../wal/recovery.ts";
import { JobLogReplayError } from "../jobs/job_store.ts";
import type { DeliveryReport } from "../delivery/types.ts";

/** Environment variable holding the API bearer token (instead of `--api-token`). */
export const API_TOKEN_ENV = "HOOKD_API_TOKEN";

export const nodeCommand: LeafCommand = {
  spec: {
    name: "node",
    summary: "Run a cluster node: replicated job store, delivery and the HTTP API",
    flags: {
      id: { type: "string", help: "Node id (1-64 bytes, unique in the cluster)", valueName: "ID" },
      listen: {
        type: "string",
        help: "UDP host:port to bind for the cluster transport",
        valueName: "HOST:PORT",
      },
      advertise: {
        type: "string",
        help: "UDP host:port peers reach this node at (default: --listen; needed with 0.0.0.0)",
        valueName: "HOST:PORT",
      },
      http: {
        type: "string",
        help: "HTTP API host:port (port 0 picks one; printed at start)",
        valueName: "HOST:PORT",
        default: "127.0.0.1:0",
      },
      peers: {
        type: "string",
        help: "Every voter's UDP address, comma-separated (the same list on every node; " +
          "quorum is a majority of them)",
        valueName: "A:P,B:P",
        multiple: true,
      },
      data: {
        type: "string",
        help: "Directory of this node's write-ahead log (one process per directory)",
        valueName: "DIR",
      },
      "api-token": {
        type: "string",
        help: `Require 'Authorization: Bearer TOKEN' on /v1/ routes (>= ${API_TOKEN_CHARS_MIN} ` +
          `chars); else $${API_TOKEN_ENV}`,
        valueName: "TOKEN",
      },
      "tls-cert": {
        type: "string",
        help: "Serve the API over HTTPS with this PEM certificate",
        valueName: "FILE",
      },
      "tls-key": { type: "string", help: "PEM private key for --tls-cert", valueName: "FILE" },
      "allow-private-targets": {
        type: "boolean",
        help: "Deliver to loopback and private addresses (off: the SSRF guard refuses them)",
      },
      "deliver-without-majority": {
        type: "boolean",
        help: "Keep delivering while fewer than a majority of the voters are reachable " +
          "(off: such a node delivers nothing, so a partition's two sides do not both deliver)",
      },
      retention: {
        type: "string",
        help: "How long delivered jobs stay queryable, seconds",
        valueName: "S",
        default: String(jobsDefaults.finishedRetentionMs / 1000),
      },
      "retention-max": {
        type: "string",
        help:
          "Most delivered jobs kept queryable; past it the longest finished leave first, before --retention",
        valueName: "N",
        default: String(jobsDefaults.finishedJobsMax),
      },
      "backlog-max": {
        type: "string",
        help:
          "Most jobs pending delivery; past it submits and events are refused with 503 until deliveries drain them",
        valueName: "N",
        default: String(jobsDefaults.backlogJobsMax),
      },
      "backlog-bytes-max": {
        type: "string",
        help:
          "Most bytes (2 a character) the bodies of jobs pending delivery hold: payloads, URLs, headers, secrets; past it submits and events are refused with 503",
        valueName: "BYTES",
        default: String(jobsDefaults.backlogBytesMax),
      },
      "retry-schedule": {
        type: "string",
        help:
          "Delays before retries, ms, comma-separated (default: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h)",
        valueName: "MS,MS,...",
      },
      "max-attempts": {
        type: "string",
        help: "Attempts a job gets when its submit names none, and every event's job",
        valueName: "N",
        default: String(jobsDefaults.maxAttemptsDefault),
      },
      "breaker-open-ms": {
        type: "string",
        help: "How long an origin's circuit breaker first stays open after its failures, and the " +
          "most its doubling reaches, ms (default: 5000,300000)",
        valueName: "FIRST,MAX",
      },
      "wal-sync": {
        type: "string",
        help: "WAL mode: batched (group commit) or per-append (one fsync per record; for benches)",
        valueName: "MODE",
        default: "batched",
      },
      "wal-inline-sync-ms": {
        type: "string",
        help:
          "fsync on the event-loop thread while recent fsyncs took less than this, ms (0: always in the blocking pool)",
        valueName: "MS",
        default: String(walDefaults.inlineSyncMsMax),
      },
      "wal-sync-pace-ms": {
        type: "string",
        help:
          "While appends come in a stream, wait as long as the last fsync took, at most this, before the next (0: off)",
        valueName: "MS",
        default: String(walDefaults.syncPaceMsMax),
      },
      "no-deliver": {
        type: "boolean",
        help: "Store and replicate jobs but never deliver them (bench replication only)",
      },
      "fault-injection": {
        type: "boolean",
        help: "TEST-ONLY: serve a loopback control port that partitions this node, drops its " +
          "ingress or fails its WAL (chaos runs); also logs every attempt",
      },
      "cpu-profile-dir": {
        type: "string",
        valueName: "DIR",
        help: "Each SIGUSR2 starts or stops a V8 CPU profile, written to DIR/<id>-<n>.cpuprofile",
      },
      "alloc-profile-dir": {
        type: "string",
        valueName: "DIR",
        help:
          "Each SIGUSR2 starts or stops sampling every allocation (garbage included), written to DIR/<id>-<n>.heapprofile",
      },
      "submits-in-flight-max": {
        type: "string",
        help: "Submit requests inside the API at once; past it a submit is answered 503 at once",
        valueName: "N",
        default: String(apiDefaults.submitsInFlightMax),
      },
      ...transportFlags,
    },
  },
  async run(args) {
    const { tlsPaths, ...options } = nodeOptionsFromFlags(args.values);
    const profileDirs = {
      cpu: stringFlag(args.values, "cpu-profile-dir"),
      allocations: stringFlag(args.values, "alloc-profile-dir"),
    };
    let tls: ApiTls | undefined;
    if (tlsPaths !== undefined) {
      try {
        tls = await loadTlsFiles(tlsPaths.certPath, tlsPaths.keyPath);
      } catch (error) {
        throw new UsageError(`hookd node: ${error instanceof Error ? error.message : error}`);
      }
    }
    // Listen before starting: a SIGTERM that arrives while the WAL is replaying must still
    // stop the node gracefully once it is up, not kill it with the default action.
    const stop = listenForStopSignal();
    let node: Node;
    try {
      node = await Node.start({
        ...options,
        ...(tls !== undefined ? { tls } : {}),
        onMemberEvent: (e) =>
          printJsonLine({
            event: e.type,
            node: e.nodeId,
            address: e.address,
            incarnation: e.incarnation,
            observer: options.nodeId,
            time: new Date().toISOString(),
          }),
        onLog: (event, fields) =>
          printJsonLine({
            event,
            ...fields,
            observer: options.nodeId,
            time: new Date().toISOString(),
          }),
        ...(options.faultInjection === true
          ? {
            // Chaos runs attribute duplicates and stale attempts from these lines.
            onReport: (report: DeliveryReport) =>
              printJsonLine({
                event: "attempt",
                job: report.jobId,
                kind: report.kind,
                ...(report.attempt !== undefined
                  ? {
                    attempt: report.attempt.attempt,
                    startedAtMs: report.attempt.startedAtMs,
                    latencyMs: report.attempt.latencyMs,
                    outcome: report.attempt.outcome,
                  }
                  : {}),
                observer: options.nodeId,
              }),
          }
          : {}),
      });
    } catch (error) {
      stop.dispose();
      if (error instanceof RangeError) throw new UsageError(`hookd node: ${error.message}`);
      if (
        error instanceof DataDirLockedError || error instanceof WalCorruptionError ||
        error instanceof JobLogReplayError
      ) {
        console.error(`hookd node: ${error.message}`);
        return EXIT_FAILURE;
      }
      if (error instanceof Deno.errors.AddrInUse) {
        console.error(`hookd node: address in use: ${error.message}`);
        return EXIT_FAILURE;
      }
      throw error;
    }
    printJsonLine({
      event: "listening",
      node: options.nodeId,
      address: node.address,
      voters: node.voters.length,
      ...(node.api !== undefined ? { http: node.api.url } : {}),
      ...(node.faults !== undefined ? { faults: node.faults.control.url, pid: Deno.pid } : {}),
    });
    const profiling = profileDirs.cpu === undefined && profileDirs.allocations === undefined
      ? undefined
      : listenForProfileSignal(profileDirs, options.nodeId, (event, fields) =>
        printJsonLine({
          event,
          ...fields,
          observer: options.nodeId,
          time: new Date().toISOString(),
        }));
    const signal = await stop.received;
    profiling?.dispose();
    // Listening until stopped: a Ctrl-C reaches the whole terminal group, so a node under
    // `hookd cluster` (or `deno task`) gets a second signal (the supervisor's SIGTERM, the
    // task runner's forwarded SIGINT) while it drains, and with no listener that second
    // signal would kill it mid-drain.
    await node.stop();
    stop.dispose();
    printJsonLine({ event: "stopped", node: options.nodeId, signal });
    return EXIT_OK;
  },
};

type NodeFlagOptions = Omit<NodeOptions, "onLog" | "onMemberEvent" | "onReport" | "tls"> & {
  tlsPaths?: { certPath: string; keyPath: string };
};

function nodeOptionsFromFlags(values: FlagValues): NodeFlagOptions {
  const nodeId = stringFlag(values, "id");
  if (nodeId === undefined || nodeId === "") throw new UsageError("hookd node: --id is required");
  const listen = stringFlag(values, "listen");
  if (listen === undefined) throw new UsageError("hookd node: --listen is required");
  const dataDir = stringFlag(values, "data");
  if (dataDir === undefined || dataDir === "") {
    throw new UsageError("hookd node: --data DIR is required (where this node's WAL lives)");
  }
  const httpFlag = stringFlag(values, "http") ?? "127.0.0.1:0";
  const http = parseAddress(httpFlag, { allowPortZero: true });
  if (!http.ok) throw new UsageError(`hookd node: --http: ${http.reason}`);
  const transport = transportOptionsFromFlags(values);
  const apiToken = stringFlag(values, "api-token") ?? Deno.env.get(API_TOKEN_ENV);
  const tokenProblem = apiToken === undefined ? undefined : apiTokenProblem(apiToken);
  if (tokenProblem !== undefined) throw new UsageError(`hookd node: --api-token ${tokenProblem}`);
  const certPath = stringFlag(values, "tls-cert");
  const keyPath = stringFlag(values, "tls-key");
  if ((certPath === undefined) !== (keyPath === undefined)) {
    throw new UsageError("hookd node: --tls-cert and --tls-key go together");
  }
  const retentionS = numberFlag(values, "retention", jobsDefaults.finishedRetentionMs / 1000, {
    min: 0,
  });
  const finishedJobsMax = numberFlag(values, "retention-max", jobsDefaults.finishedJobsMax, {
    min: 1,
    integer: true,
  });
  const backlogJobsMax = numberFlag(values, "backlog-max", jobsDefaults.backlogJobsMax, {
    min: 1,
    integer: true,
  });
  const backlogBytesMax = numberFlag(
    values,
    "backlog-bytes-max",
    jobsDefaults.backlogBytesMax,
    { min: 1, integer: true },
  );
  const walSync = stringFlag(values, "wal-sync") ?? "batched";
  if (walSync !== "batched" && walSync !== "per-append") {
    throw new UsageError(`hookd node: --wal-sync must be batched or per-append, got ${walSync}`);
  }
  const inlineSyncMsMax = numberFlag(values, "wal-inline-sync-ms", walDefaults.inlineSyncMsMax, {
    min: 0,
  });
  const syncPaceMsMax = numberFlag(values, "wal-sync-pace-ms", walDefaults.syncPaceMsMax, {
    min: 0,
  });
  const maxAttemptsDefault = numberFlag(values, "max-attempts", jobsDefaults.maxAttemptsDefault, {
    min: 1,
    max: jobsDefaults.maxAttemptsMax,
    integer: true,
  });
  const breaker = breakerOpenFlag(stringFlag(values, "breaker-open-ms"));
  const scheduleRaw = stringFlag(values, "retry-schedule");
  let retryScheduleMs: number[] | undefined;
  if (scheduleRaw !== undefined) {
    retryScheduleMs = scheduleRaw.split(",").map((part) => {
      const ms = Number(part.trim());
      if (part.trim() === "" || !Number.isFinite(ms) || ms < 0) {
        throw new UsageError(
          `hookd node: --retry-schedule: ${JSON.stringify(part)} is not a delay in ms`,
        );
      }
      return ms;
    });
    if (retryScheduleMs.length === 0) throw new UsageError("hookd node: --retry-schedule is empty");
  }
  return {
    nodeId,
    listen,
    ...(stringFlag(values, "advertise") !== undefined
      ? { advertise: stringFlag(values, "advertise")! }
      : {}),
    peers: listFlag(values, "peers"),
    clusterKey: transport.clusterKey,
    dataDir,
    http: http.value,
    ...(certPath !== undefined && keyPath !== undefined ? { tlsPaths: { certPath, keyPath } } : {}),
    ...(apiToken !== undefined ? { apiToken } : {}),
    lossProbability: transport.lossProbability ?? 0,
    ...(transport.lossSeed !== undefined ? { lossSeed: transport.lossSeed } : {}),
    ...(transport.config !== undefined ? { transport: transport.config } : {}),
    jobs: {
      finishedRetentionMs: retentionS * 1000,
      finishedJobsMax,
      backlogJobsMax,
      backlogBytesMax,
      maxAttemptsDefault,
      deliverWithoutMajority: booleanFlag(values, "deliver-without-majority"),
    },
    wal: { syncMode: walSync, inlineSyncMsMax, syncPaceMsMax },
    delivery: {
      allowPrivateTargets: booleanFlag(values, "allow-private-targets"),
      ...(retryScheduleMs !== undefined ? { retryScheduleMs } : {}),
      ...breaker,
    },
    deliver: !booleanFlag(values, "no-deliver"),
    faultInjection: booleanFlag(values, "fault-injection"),
    api: {
      submitsInFlightMax: numberFlag(
        values,
        "submits-in-flight-max",
        apiDefaults.submitsInFlightMax,
        {
          min: 1,
          max: 1_000_000,
          integer: true,
        },
      ),
    },
  };
}

/** `--breaker-open-ms FIRST,MAX`: whole ms, 1 <= FIRST <= MAX; absent: the defaults. */
function breakerOpenFlag(
  raw: string | undefined,
): { breakerOpenMs: number; breakerOpenMaxMs: number } | Record<never, never> {
  if (raw === undefined) return {};
  const parts = raw.split(",").map((p) => p.trim());
  const [first, max] = parts.map(Number);
  if (
    parts.length !== 2 || parts.some((p) => !/^[0-9]+$/.test(p)) || first === undefined ||
    max === undefined || first < 1 || first > max
  ) {
    throw new UsageError(
      `hookd node: --breaker-open-ms ${JSON.stringify(raw)} must be FIRST,MAX in whole ms, ` +
        "1 <= FIRST <= MAX",
    );
  }
  return { breakerOpenMs: first, breakerOpenMaxMs: max };
}
