/**
 * An in-memory `JobService` for the API tests: accepts jobs into a map, honours idempotency
 * keys (same key and body: same id; other body: conflict), and can be told to refuse, throw,
 * or hang, so every HTTP mapping can be reached without a cluster.
 */

import type {
  ClusterView,
  DeadLetterPage,
  JobService,
  JobView,
  Readiness,
  Refusal,
  RefusalCode,
  SubmitOutcome,
  SubmitRequest,
} from "../../src/jobs/service.ts";
import type {
  EndpointCreateKey,
  EndpointFields,
  EndpointHealthPage,
  EndpointOutcome,
  EndpointPage,
  EndpointView,
  EventOutcome,
  EventRequest,
  EventView,
  RecoverOutcome,
} from "../../src/jobs/service.ts";
import { applyWrite, type EndpointWrite, nextVersion } from "../../src/jobs/endpoint_model.ts";
import { EndpointTable } from "../../src/jobs/endpoint_table.ts";
import { keyedCreateAnswer, keyedEndpointId } from "../../src/jobs/endpoint_keyed.ts";
import { eventJobId, fanoutOf } from "../../src/jobs/event_model.ts";
import { endpointHealthItem, endpointView } from "../../src/jobs/job_store.ts";
import type { EndpointHealthView } from "../../src/jobs/endpoint_attempt_stats.ts";

export type FakeMode =
  /** Accept (the default). */
  | { readonly kind: "accept" }
  /** Refuse every submit, batch item and retry with this code. */
  | { readonly kind: "refuse"; readonly code: RefusalCode; readonly retryAfterS?: number }
  /** Throw from every call (a store bug). */
  | { readonly kind: "throw" }
  /** Never resolve submits (a store that is stuck); `release()` resolves them all. */
  | { readonly kind: "hang" };

export class FakeJobService implements JobService {
  mode: FakeMode = { kind: "accept" };
  readonly jobs = new Map<string, JobView>();
  readonly submitted: SubmitRequest[] = [];
  readonly batches: (readonly SubmitRequest[])[] = [];
  readonly retried: string[] = [];
  readiness_: Readiness = {
    ready: true,
    checks: [
      { name: "recovered", ok: true, detail: "wal replayed" },
      { name: "caught_up", ok: true, detail: "no gaps" },
      { name: "quorum", ok: true, detail: "5 of 5 voters reachable" },
      { name: "wal", ok: true, detail: "healthy" },
    ],
  };
  #keys = new Map<string, { id: string; body: string }>();
  #next = 1;
  #parked: (() => void)[] = [];
  #nowMs = 1_700_000_000_000;

  /** Resolves every hanging submit (as accepted). */
  release(): void {
    const parked = this.#parked;
    this.#parked = [];
    for (const resume of parked) resume();
  }

  get parked(): number {
    return this.#parked.length;
  }

  #refusal(): Refusal | undefined {
    if (this.mode.kind !== "refuse") return undefined;
    const refusal: Refusal = {
      ok: false,
      code: this.mode.code,
      message: `fake refuses: ${this.mode.code}`,
    };
    if (this.mode.code === "invalid") return { ...refusal, field: "url" };
    if (this.mode.retryAfterS !== undefined) {
      return { ...refusal, retryAfterS: this.mode.retryAfterS };
    }
    return refusal;
  }

  #accept(request: SubmitRequest): SubmitOutcome {
    const refusal = this.#refusal();
    if (refusal !== undefined) return refusal;
    const body = JSON.stringify({ ...request, idempotencyKey: undefined });
    if (request.idempotencyKey !== undefined) {
      const earlier = this.#keys.get(request.idempotencyKey);
      if (earlier !== undefined) {
        if (earlier.body !== body) {
          return { ok: false, code: "idempotency_conflict", message: "key used with another body" };
        }
        return { ok: true, id: earlier.id, existing: true };
      }
    }
    const id = `job-${this.#next++}`;
    if (request.idempotencyKey !== undefined) this.#keys.set(request.idempotencyKey, { id, body });
    this.jobs.set(id, {
      id,
      state: "pending",
      url: request.url,
      submittedAtMs: this.#nowMs++,
      attemptsMade: 0,
      maxAttempts: request.maxAttempts ?? 7,
      retry: 0,
      attemptsTotal: 0,
      owner: "n1",
      attempts: [],
      payload: request.payload,
      ...(request.idempotencyKey !== undefined ? { idempotencyKey: request.idempotencyKey } : {}),
    });
    return { ok: true, id, existing: false };
  }

  submit(request: SubmitRequest): Promise<SubmitOutcome> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    this.submitted.push(request);
    if (this.mode.kind === "hang") {
      return new Promise((resolve) => this.#parked.push(() => resolve(this.#accept(request))));
    }
    return Promise.resolve(this.#accept(request));
  }

  submitBatch(requests: readonly SubmitRequest[]): Promise<SubmitOutcome[]> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    this.batches.push(requests);
    const answer = () => requests.map((r) => this.#accept(r));
    if (this.mode.kind === "hang") {
      return new Promise((resolve) => this.#parked.push(() => resolve(answer())));
    }
    return Promise.resolve(answer());
  }

  getJob(id: string): Promise<JobView | undefined> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    return Promise.resolve(this.jobs.get(id));
  }

  recentJobs(limit: number): readonly JobView[] {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    return [...this.jobs.values()].reverse().slice(0, limit);
  }

  listDeadLetters(limit: number, cursor?: string): DeadLetterPage {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    const dead = [...this.jobs.values()].filter((j) => j.state === "dead");
    const start = cursor === undefined ? 0 : Number(cursor);
    const items = dead.slice(start, start + limit);
    const next = start + limit < dead.length ? String(start + limit) : undefined;
    return next === undefined ? { items } : { items, nextCursor: next };
  }

  retryDeadLetter(id: string): Promise<{ readonly ok: true } | Refusal> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    if (this.mode.kind === "hang") {
      return new Promise((resolve) => this.#parked.push(() => resolve({ ok: true })));
    }
    const refusal = this.#refusal();
    if (refusal !== undefined) return Promise.resolve(refusal);
    const job = this.jobs.get(id);
    if (job === undefined) {
      return Promise.resolve({ ok: false, code: "not_found", message: `no dead letter ${id}` });
    }
    if (job.state !== "dead") {
      return Promise.resolve({
        ok: false,
        code: "not_dead_letter",
        message: `job ${id} is ${job.state}; only a dead letter can be retried`,
      });
    }
    this.retried.push(id);
    this.jobs.set(id, { ...job, state: "pending", attemptsMade: 0 });
    return Promise.resolve({ ok: true });
  }

  cluster(): ClusterView {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    return {
      nodeId: "n1",
      address: "127.0.0.1:7001",
      voters: 3,
      quorum: 2,
      votersReachable: 3,
      role: "ready",
      members: [
        { nodeId: "n1", address: "127.0.0.1:7001", state: "alive", incarnation: 0, voter: true },
        { nodeId: "n2", address: "127.0.0.1:7002", state: "suspect", incarnation: 2, voter: true },
        { nodeId: "n3", address: "127.0.0.1:7003", state: "alive", incarnation: 1, voter: true },
      ],
      jobs: { pending: 1, delivering: 0, delivered: 5, dead: 1 },
    };
  }

  readiness(): Readiness {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    return this.readiness_;
  }

  /** Endpoints, held by the real table and merge rule on one pretend node. */
  readonly endpoints = new EndpointTable({ endpointTombstoneMs: 60_000 });
  #endpointSeq = 0;

  /** The key of the last keyed create, as the API passed it. */
  lastEndpointKey: EndpointCreateKey | undefined;

  createEndpoint(fields: EndpointFields, key?: EndpointCreateKey): Promise<EndpointOutcome> {
    if (key === undefined) return this.#writeEndpoint({ kind: "create", fields });
    this.lastEndpointKey = key;
    return this.#writeEndpoint({
      kind: "create-keyed",
      id: keyedEndpointId(key.idempotencyKey),
      fields,
      secretGiven: key.secretGiven,
    });
  }

  updateEndpoint(id: string, patch: Partial<EndpointFields>): Promise<EndpointOutcome> {
    return this.#writeEndpoint({ kind: "update", id, patch });
  }

  deleteEndpoint(id: string): Promise<EndpointOutcome> {
    return this.#writeEndpoint({ kind: "delete", id });
  }

  rotateEndpointSecret(id: string, secret: string): Promise<EndpointOutcome> {
    return this.#writeEndpoint({ kind: "rotate", id, secret, overlapMs: 86_400_000 });
  }

  /** Recovers asked for (endpoint id, since), answered `recovered: 2`. */
  readonly recovers: { id: string; sinceMs: number }[] = [];

  recoverEndpoint(id: string, sinceMs: number): Promise<RecoverOutcome> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    const refusal = this.#refusal();
    if (refusal !== undefined) return Promise.resolve(refusal);
    if (this.endpoints.get(id) === undefined) {
      return Promise.resolve({ ok: false, code: "not_found", message: `no endpoint ${id}` });
    }
    this.recovers.push({ id, sinceMs });
    return Promise.resolve({ ok: true, recovered: 2, failed: 0 });
  }

  #writeEndpoint(write: EndpointWrite): Promise<EndpointOutcome> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    if (this.mode.kind === "hang") {
      return new Promise((resolve) =>
        this.#parked.push(() => resolve(this.#writeEndpointNow(write)))
      );
    }
    return Promise.resolve(this.#writeEndpointNow(write));
  }

  #writeEndpointNow(write: EndpointWrite): EndpointOutcome {
    const refusal = this.#refusal();
    if (refusal !== undefined) return refusal;
    const seq = ++this.#endpointSeq;
    const id = write.kind === "create" ? `ep_${String(seq).padStart(24, "0")}` : write.id;
    const current = this.endpoints.value(id);
    const version = nextVersion(current, { origin: "n1", seq }, this.#nowMs);
    if (write.kind === "create-keyed" && current !== undefined) {
      // The real store's rule (submit_path.ts), on one pretend node.
      const answer = keyedCreateAnswer(current, write.fields, write.secretGiven);
      if (answer !== "same") {
        return { ok: false, code: "idempotency_conflict", message: `key used: ${answer}` };
      }
      return { ok: true, endpoint: endpointView(current) };
    }
    const next = applyWrite(current, write, version, id);
    if (!next.ok) return { ok: false, code: "not_found", message: `no endpoint ${id}` };
    this.endpoints.apply(next.value);
    return { ok: true, endpoint: endpointView(next.value) };
  }

  getEndpoint(id: string): EndpointView | undefined {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    const s = this.endpoints.get(id);
    return s === undefined ? undefined : endpointView(s);
  }

  /** A majority read, faked: `refuse` mode answers its refusal (no majority answered). */
  readEndpoint(id: string): Promise<EndpointView | undefined | Refusal> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    const refusal = this.#refusal();
    return Promise.resolve(refusal ?? this.getEndpoint(id));
  }

  listEndpoints(limit: number, cursor?: string): EndpointPage {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    const page = this.endpoints.list(limit, cursor);
    return { ...page, items: page.items.map(endpointView) };
  }

  /** What `endpointHealth` shows per endpoint id (no attempts when absent). */
  readonly health = new Map<string, EndpointHealthView>();
  /** The backlog `endpointHealth` shows for an ordered endpoint (0 when absent). */
  readonly backlogs = new Map<string, number>();

  endpointHealth(limit: number, cursor?: string): EndpointHealthPage {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    const page = this.endpoints.list(limit, cursor);
    return {
      windowMs: 900_000,
      items: page.items.map((s) =>
        endpointHealthItem(
          s,
          this.health.get(s.id) ?? { attempts: 0, failures: 0 },
          s.ordered ? this.backlogs.get(s.id) ?? 0 : undefined,
        )
      ),
      ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
    };
  }

  /** Events, fanned out from `endpoints` by the real rule; jobs pending, never attempted. */
  readonly events = new Map<string, { view: EventView; key?: string }>();

  submitEvent(request: EventRequest): Promise<EventOutcome> {
    if (this.mode.kind === "throw") return Promise.reject(new Error("fake store bug"));
    if (this.mode.kind === "hang") {
      return new Promise((resolve) => this.#parked.push(() => resolve(this.#eventNow(request))));
    }
    return Promise.resolve(this.#eventNow(request));
  }

  #eventNow(request: EventRequest): EventOutcome {
    const refusal = this.#refusal();
    if (refusal !== undefined) return refusal;
    for (const { view, key } of this.events.values()) {
      if (key === undefined || key !== request.idempotencyKey) continue;
      if (view.type !== request.type || view.payload !== request.payload) {
        return { ok: false, code: "idempotency_conflict", message: "another body" };
      }
      return { ok: true, id: view.id, type: view.type, jobs: view.jobs.length, existing: true };
    }
    const id = `evt_${String(this.events.size + 1).padStart(32, "0")}`;
    const view: EventView = {
      id,
      type: request.type,
      payload: request.payload,
      createdAtMs: this.#nowMs,
      jobs: fanoutOf(this.endpoints.values(), request.type).map((e) => ({
        endpointId: e.id,
        jobId: eventJobId(id, e.id),
        state: "pending",
        attemptsTotal: 0,
        attempts: [],
      })),
    };
    this.events.set(id, {
      view,
      ...(request.idempotencyKey !== undefined ? { key: request.idempotencyKey } : {}),
    });
    return { ok: true, id, type: view.type, jobs: view.jobs.length, existing: false };
  }

  getEvent(id: string): EventView | undefined {
    if (this.mode.kind === "throw") throw new Error("fake store bug");
    return this.events.get(id)?.view;
  }

  /** Adds a job in a given state (a dead letter, a delivered job with attempts). */
  put(view: JobView): void {
    this.jobs.set(view.id, view);
  }
}

/** A dead letter with one failed attempt, for list and retry tests. */
export function deadJob(id: string): JobView {
  return {
    id,
    state: "dead",
    url: "https://receiver.example/hook",
    submittedAtMs: 1_700_000_000_000,
    finishedAtMs: 1_700_000_005_000,
    attemptsMade: 1,
    maxAttempts: 1,
    retry: 0,
    attemptsTotal: 1,
    owner: "n2",
    deadReason: "receiver answered 500 on the last attempt",
    attempts: [{
      attempt: 1,
      retry: 0,
      startedAtMs: 1_700_000_000_010,
      latencyMs: 12.5,
      outcome: "http_error",
      status: 500,
      detail: "internal error",
      node: "n2",
    }],
    payload: '{"n":1}',
  };
}
