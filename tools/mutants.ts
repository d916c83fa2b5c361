/**
 * The second-engineer review's mutation checks, runnable: each mutant breaks one invariant on
 * purpose (skips an fsync, a retransmit, a quorum count, …) in a scratch copy of the tree and
 * runs the tests that claim to guard it. A mutant the tests do not kill is an invariant nobody
 * is testing, and the run exits 1.
 *
 *   deno task mutants            every mutant (a few minutes)
 *   deno task mutants quorum     the mutants whose name contains "quorum"
 *
 * Not part of `deno task test`: it runs parts of the suite once per mutant. The working tree is
 * never touched; each mutant runs in its own copy under the system temp dir, removed after.
 *
 * Owns: the list of mutants and the loop. Must not: edit files outside its scratch copies.
 */

interface Mutant {
  /** Short name, for filtering and the report. */
  name: string;
  /** The invariant it breaks. */
  breaks: string;
  file: string;
  /** Exact text, present once in `file`. */
  from: string;
  to: string;
  /** Test files that must fail with the mutant in place. */
  tests: string[];
}

const MUTANTS: Mutant[] = [
  {
    name: "wal-skip-fsync",
    breaks: "an append resolves only once its batch is fsynced",
    file: "src/wal/wal.ts",
    from: "    await this.#file.syncData();\n    this.#lastSyncMs",
    to: "    this.#lastSyncMs",
    tests: ["tests/wal/wal_test.ts", "tests/wal/wal_crash_points_test.ts"],
  },
  {
    name: "jobs-quorum-minority",
    breaks: "a submit is acknowledged on a majority of the configured voters",
    file: "src/jobs/replication_core.ts",
    from: "this.quorum = Math.floor(voters.length / 2) + 1;",
    to: "this.quorum = Math.floor(voters.length / 2);",
    tests: ["tests/jobs/replication_core_test.ts", "tests/jobs/review_found_test.ts"],
  },
  {
    name: "jobs-ack-before-fsync",
    breaks: "a replica says 'on my disk' only once its append is durable",
    file: "src/jobs/incoming_records.ts",
    from: 'if (entry.status === "ok") this.#deferAck(this.#appends.nextToken, from, entry);',
    to: 'if (entry.status === "ok") immediate.push(entry);',
    tests: ["tests/jobs/replication_core_test.ts", "tests/jobs/review_found_test.ts"],
  },
  {
    name: "jobs-stale-handoff",
    breaks: "a handoff does not revive a job this node saw finish and compacted",
    file: "src/jobs/job_duties.ts",
    from: 'return state.phase === "pending" && state.gen === 0',
    to: 'return state.phase === "mutated" as string && state.gen === 0',
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "jobs-finished-stub-dropped",
    breaks: "a job whose DONE came before its SUBMIT is not revived by the late SUBMIT",
    file: "src/jobs/job_table.ts",
    from: "        if (isStub(entry)) continue;",
    to: "",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "jobs-dead-listed-before-durable",
    breaks: "a job is listed as a dead letter only once its DEAD record is durable here",
    file: "src/jobs/job_table.ts",
    from: "      if (!listed(id)) continue;\n",
    to: "",
    tests: ["tests/jobs/contracts_test.ts"],
  },
  {
    name: "jobs-dead-revived-before-durable",
    breaks: "a dead letter is retried by hand only once its DEAD record is durable here",
    file: "src/jobs/submit_path.ts",
    from: "if (this.#appends.deadNotDurable(jobId)) {",
    to: "if (false) {",
    tests: ["tests/jobs/contracts_test.ts"],
  },
  {
    name: "jobs-attempt-retry-dropped",
    breaks: "a manual retry's attempts are recorded with the retry they belong to",
    file: "src/jobs/delivery_reports.ts",
    from: "      ...(gen > 0 ? { retry: gen } : {}),\n",
    to: "",
    tests: ["tests/jobs/contracts_test.ts"],
  },
  {
    name: "jobs-attempt-numbering-restarts",
    breaks: "attempts are numbered across manual retries (a retry continues the count)",
    file: "src/jobs/job_model.ts",
    from: "before.set(round, total);",
    to: "before.set(round, 0);",
    tests: ["tests/jobs/job_model_test.ts", "tests/jobs/contracts_test.ts"],
  },
  {
    name: "jobs-codec-attempt-retry-lost",
    breaks: "an attempt's retry round survives the WAL and the wire",
    file: "src/jobs/job_codec.ts",
    from: "if (retry > 0) w.u8(outcome | ATTEMPT_RETRY_FLAG).u32(retry);",
    to: "if (false as boolean) w.u8(outcome | ATTEMPT_RETRY_FLAG).u32(retry);",
    tests: ["tests/jobs/job_codec_test.ts"],
  },
  {
    name: "jobs-no-gone-tombstone",
    breaks: "a job finished and compacted here never comes back pending from a late record",
    file: "src/jobs/job_table.ts",
    from: "if (recordGen(record) <= (this.#goneGens.get(jobId) ?? 0)) {",
    to: "if (recordGen(record) < 0) {",
    tests: ["tests/jobs/review_found_test.ts", "tests/jobs/job_table_test.ts"],
  },
  {
    name: "transport-no-retransmit",
    breaks: "a reliable message whose datagram was lost is sent again",
    file: "src/transport/sender.ts",
    from: "      this.#retransmit.push(c);\n      queued++;",
    to: "      queued++;",
    tests: ["tests/transport/sim_test.ts", "tests/transport/endpoint_test.ts"],
  },
  {
    name: "aead-open-ignores-tag",
    breaks: "a datagram opens only when its ChaCha20-Poly1305 tag authenticates it",
    file: "src/lib/sodium.ts",
    from: "  if (rc !== 0) return undefined;\n",
    to: "",
    tests: ["tests/lib/sodium_test.ts", "tests/transport/datagram_crypto_test.ts"],
  },
  {
    name: "wal-inline-sync-on-slow-disk",
    breaks: "fsyncs leave the event-loop thread once the disk's recent ones are slow",
    file: "src/wal/wal_fs.ts",
    from: "    return this.#averageMs < this.limitMs;",
    to: "    return this.limitMs > 0;",
    tests: ["tests/wal/wal_fs_test.ts"],
  },
  {
    name: "transport-flush-per-microtask",
    breaks: "a turn's outputs leave together: a reply made a few microtasks on rides with its ack",
    file: "src/transport/udp_transport.ts",
    from: "    this.#runtime.defer(() => {\n      this.#flushQueued = false;",
    to: "    queueMicrotask(() => {\n      this.#flushQueued = false;",
    tests: ["tests/transport/udp_transport_test.ts"],
  },
  {
    name: "wal-inline-sync-without-sending-first",
    breaks: "what is queued for peers leaves before an inline fsync blocks the thread",
    file: "src/wal/wal_fs.ts",
    from: "        this.#beforeInlineSync();\n",
    to: "",
    tests: ["tests/wal/wal_fs_test.ts"],
  },
  {
    name: "transport-send-queued-sends-acks-alone",
    breaks:
      "sending queued messages early leaves an ack with nothing to ride on for the turn's flush",
    file: "src/transport/session.ts",
    from: "    if (dataOnly && !this.#sender.hasData(nowMs)) return;\n",
    to: "",
    tests: ["tests/transport/udp_transport_test.ts"],
  },
  {
    name: "transport-no-replay-window",
    breaks: "a replayed datagram is dropped",
    file: "src/transport/replay_window.ts",
    from:
      "    if (this.#top - counter >= this.#size) return false;\n    return !this.#has(counter);",
    to: "    return true;",
    tests: ["tests/transport/replay_test.ts"],
  },
  {
    name: "swim-no-refutation",
    breaks: "a suspected live member refutes with a higher incarnation",
    file: "src/membership/swim_core.ts",
    from: "const next = Math.max(self.incarnation, seenIncarnation) + 1;",
    to: "const next = self.incarnation;",
    tests: ["tests/membership/swim_core_test.ts"],
  },
  {
    name: "delivery-5xx-is-success",
    breaks: "only a 2xx answer finishes a job",
    file: "src/delivery/retry_policy.ts",
    from: 'if (result.status >= 200 && result.status <= 299) return "success";',
    to: 'if (result.status >= 200 && result.status <= 599) return "success";',
    tests: ["tests/delivery/retry_policy_test.ts"],
  },
  {
    name: "data-dir-no-lock",
    breaks: "a second process cannot open a node's data directory",
    file: "src/jobs/data_dir_lock.ts",
    from: "  if (!locked) {",
    to: "  if (false as boolean) {",
    tests: ["tests/jobs/data_dir_lock_test.ts"],
  },
  {
    name: "api-token-ignored",
    breaks: "with --api-token, /v1/ routes need the bearer token",
    file: "src/api/auth.ts",
    from: "    return timingSafeEqual(digest(match[1]!), expected);",
    to: "    return timingSafeEqual(digest(match[1]!), expected) || true;",
    tests: ["tests/api/server_test.ts", "tests/api/routes_test.ts"],
  },
  {
    name: "jobs-vote-forged-sender",
    breaks: "a vote counts only from the voter the transport authenticated it from",
    file: "src/jobs/replication_core.ts",
    from: "if (m.from !== fromAddress || !this.#peers.includes(m.from)) {",
    to: "if (!this.#peers.includes(m.from)) {",
    tests: ["tests/jobs/forged_sender_test.ts"],
  },
  {
    name: "swim-foreign-sender",
    breaks: "only the voters' authenticated addresses speak SWIM",
    file: "src/membership/membership_service.ts",
    from: "if (this.#senders !== undefined && !this.#senders.has(m.fromAddress)) {",
    to: "if (this.#senders !== undefined && this.#senders.size < 0) {",
    tests: ["tests/membership/membership_service_test.ts"],
  },
  {
    name: "api-metrics-open",
    breaks: "with --api-token, /metrics (whose labels name receivers) needs the bearer token",
    file: "src/api/handler.ts",
    from: ' ||\n      url.pathname === "/metrics";',
    to: ";",
    tests: ["tests/api/routes_test.ts", "tests/api/openapi_test.ts"],
  },
  {
    name: "limits-api-unchecked",
    breaks: "the one submit validator refuses a job the codec cannot carry (300 headers), issue 17",
    file: "src/delivery/submit_validation.ts",
    from: "if (limited !== undefined) return problem(limited.field, limited.message);",
    to:
      "if (limited !== undefined && Date.now() < 0) return problem(limited.field, limited.message);",
    tests: ["tests/jobs/job_limits_test.ts", "tests/jobs/submit_validation_test.ts"],
  },
  {
    name: "limits-url-in-chars",
    breaks: "job limits count a URL in UTF-8 bytes, as the codec does, not in characters",
    file: "src/delivery/job_limits.ts",
    from: "if (!fitsUtf8(request.url, L.urlBytesMax)) {",
    to: "if (request.url.length > L.urlBytesMax) {",
    tests: ["tests/jobs/job_limits_test.ts", "tests/jobs/udp_client_test.ts"],
  },
  {
    name: "limits-header-count",
    breaks: "job limits bound the number of headers the codec can carry",
    file: "src/delivery/job_limits.ts",
    from: "if (headers.length > L.headersMax) {",
    to: "if (headers.length > L.headersMax * 2) {",
    tests: ["tests/jobs/job_limits_test.ts", "tests/jobs/udp_client_test.ts"],
  },
  {
    name: "limits-encoder-unasserted",
    breaks: "an encoder asserts a string's bound instead of writing bytes every peer refuses",
    file: "src/lib/bytes.ts",
    from: "if (!(bytesMax === undefined || written <= bytesMax)) {",
    to: "if (!(bytesMax === undefined || written <= bytesMax || true)) {",
    tests: ["tests/jobs/job_limits_test.ts"],
  },
  {
    name: "replay-skips-undecodable",
    breaks: "an undecodable WAL batch stops recovery instead of being skipped, issue 17",
    file: "src/jobs/job_store.ts",
    from: "if (problem !== undefined) {",
    to: 'if (problem === "skipped silently") {',
    tests: ["tests/jobs/store_replay_test.ts"],
  },
  {
    name: "peer-drops-whole-message",
    breaks: "an undecodable record costs that record, not the rest of its message, issue 17",
    file: "src/jobs/job_codec.ts",
    from: "if (skipped === undefined || !(e instanceof DecodeError)) throw e;",
    to: 'if (skipped === undefined || !(e instanceof DecodeError) || e.message !== "") throw e;',
    tests: ["tests/jobs/record_tolerance_test.ts"],
  },
  {
    name: "submit-larger-than-wal-record",
    breaks: "a submit no WAL record can hold is refused as invalid, not left to time out",
    file: "src/jobs/submit_path.ts",
    from: "if (recordBytes + WAL_BATCH_SLACK_BYTES > this.#walRecordBytesMax) {",
    to: "if (recordBytes < 0) {",
    tests: ["tests/jobs/job_limits_test.ts"],
  },
  {
    name: "idem-id-of-key-alone",
    breaks: "incarnations of an idempotency key get distinct ids (and webhook-ids)",
    file: "src/jobs/keyed_id.ts",
    from: "update(`${epoch}\\u0000${key}`)",
    to: "update(key)",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-window-never-ends",
    breaks: "a key used after its window makes a new job instead of answering with the old one",
    file: "src/jobs/keyed_id.ts",
    from: "return Math.abs(wallMs - submittedAtMs) < windowMs;",
    to: "return Math.abs(wallMs - submittedAtMs) < windowMs || true;",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-replica-ignores-other-incarnation",
    breaks: "a replica answers a keyed submit with the key's live incarnation, not a vote",
    file: "src/jobs/incoming_records.ts",
    from: 'status: other.settled ? "other_settled" : "other_live",',
    to: 'status: "ok",',
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-key-skew-margin",
    breaks: "a key is kept past its window by the clock skew between nodes",
    file: "src/jobs/job_table.ts",
    from: "return expiresAtMs + this.#options.idempotencyClockSkewMs;",
    to: "return expiresAtMs;",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-snapshot-takes-refused-as-finished",
    breaks: "a keyed SUBMIT a snapshot's server held but refused is not taken for finished there",
    file: "src/jobs/catchup_client.ts",
    from:
      "if (spec?.idempotencyKey !== undefined && spec.submittedAtMs + keyKeptMs > wallMs) continue;",
    to: "if (spec?.idempotencyKey !== undefined && spec.submittedAtMs + keyKeptMs < 0) continue;",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-key-kept-for-unacknowledged",
    breaks: "only an acknowledged keyed job leaves a kept key behind",
    file: "src/jobs/job_table.ts",
    from: "if (keepKey && entry.committed && spec?.idempotencyKey !== undefined) {",
    to: "if (keepKey && spec?.idempotencyKey !== undefined) {",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "idem-moved-request-new-deadline",
    breaks: "a keyed submit moved over to its first try keeps its first round's deadline",
    file: "src/jobs/proposal_driver.ts",
    from:
      "            { ...r, answerByMs: Math.min(r.answerByMs ?? Infinity, p.deadlineMs) },\n            verdict.spec,",
    to: "            r,\n            verdict.spec,",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-moved-event-new-deadline",
    breaks: "a keyed event moved over to its first try keeps its first round's deadline",
    file: "src/jobs/proposal_driver.ts",
    from:
      "            { ...r, answerByMs: Math.min(r.answerByMs ?? Infinity, p.deadlineMs) },\n            verdict.body,",
    to: "            r,\n            verdict.body,",
    tests: ["tests/jobs/event_idempotency_window_test.ts"],
  },
  {
    name: "idem-moved-deadline-shared",
    breaks: "a moved request's own deadline refuses it alone, not the round's other clients",
    file: "src/jobs/proposal_driver.ts",
    from: "      r.requestId === requestId && r.answerByMs !== undefined && r.answerByMs <= nowMs;",
    to: "      r.requestId >= 0 || requestId < 0;",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-moved-deadline-unarmed",
    breaks: "a moved request is refused at its own deadline, even in a round that ends later",
    file: "src/jobs/proposal_driver.ts",
    from: '      this.#host.timer(byMs, "answer-by", answerByKey(request.requestId, p.key));',
    to: "      void answerByKey;",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-unsettled-keyed-compacted",
    breaks: "a keyed job finished before its COMMIT came waits for it before it is compacted",
    file: "src/jobs/job_table.ts",
    from: "        if (isUnsettledKeyed(entry)) continue;\n",
    to: "",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "idem-unsettled-keyed-held-forever",
    breaks:
      "a keyed copy finished here whose COMMIT never comes leaves after the uncommitted retention",
    file: "src/jobs/job_table.ts",
    from: 'if (entry.phase === "pending" || isUnsettledKeyed(entry)) out.push(entry);',
    to: 'if (entry.phase === "pending") out.push(entry);',
    tests: ["tests/jobs/job_table_test.ts", "tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "idem-late-submit-not-queued-uncommitted",
    breaks: "a stub that gets its SUBMIT uncommitted is queued for the uncommitted retention",
    file: "src/jobs/job_table.ts",
    from: "        if (!entry.committed) {\n          this.#uncommittedExpiry.push(",
    to: "        if (entry.committed) {\n          this.#uncommittedExpiry.push(",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "idem-unsettled-keyed-kept-by-core",
    breaks: "the core drops a finished keyed copy whose COMMIT never came",
    file: "src/jobs/replication_core.ts",
    from: "        } else if (this.table.dropUncommitted(entry.jobId)) {",
    to: '        } else if (entry.jobId === "") {',
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "revive-carries-no-spec",
    breaks: "a REVIVE carries the committed spec to replicas that compacted the dead letter",
    file: "src/jobs/submit_path.ts",
    from: "    return bytes + WAL_BATCH_SLACK_BYTES <= this.#walRecordBytesMax ? full : bare;",
    to: "    return bytes + WAL_BATCH_SLACK_BYTES <= this.#walRecordBytesMax ? bare : bare;",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "revive-spec-ignored",
    breaks: "a REVIVE's spec fills a copy that has none",
    file: "src/jobs/job_model.ts",
    from: "mergeSpec(entry, spec, spec.bodyHash, true, record.submitStamp)",
    to: "mergeSpec(entry, undefined, spec.bodyHash, true, record.submitStamp)",
    tests: ["tests/jobs/job_model_test.ts", "tests/jobs/review_found_test.ts"],
  },
  {
    name: "key-blocks-later-generation",
    breaks: "a kept key blocks only the generation it ended, not a retry by hand's",
    file: "src/jobs/job_table.ts",
    from: "      recordGen(record) <= (tombstone.gen ?? 0)",
    to: "      recordGen(record) >= 0",
    tests: ["tests/jobs/job_table_test.ts", "tests/jobs/review_found_test.ts"],
  },
  {
    name: "key-record-drops-later-generation",
    breaks: "a peer's key of an earlier generation does not drop a copy retried by hand since",
    file: "src/jobs/job_table.ts",
    from: "if (removed !== undefined && removed.gen > (record.key.gen ?? 0)) {",
    to: "if (removed !== undefined && removed.gen < 0) {",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "key-forgets-generation",
    breaks: "a kept key remembers the generation that finished",
    file: "src/jobs/job_table.ts",
    from: "          ...(overGen > 0 ? { gen: overGen } : {}),",
    to: "          ...(overGen < 0 ? { gen: overGen } : {}),",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "keyed-compacted-late-no-guard",
    breaks: "a keyed job compacted after its key's keeping time leaves a tombstone",
    file: "src/jobs/job_table.ts",
    from: "> Math.max(entry.finishedAtMs, this.#nowWallMs)) {",
    to: "> entry.finishedAtMs) {",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "snapshot-compacts-revived-job",
    breaks: "a snapshot's finished-elsewhere rule leaves a dead letter retried by hand alone",
    file: "src/jobs/catchup_client.ts",
    from: "      if (entry.gen > 0) continue;",
    to: "      if (entry.gen < 0) continue;",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "event-job-loser-committed",
    breaks: "an event job's copy of a keyed event's losing body is told apart from the winner's",
    file: "src/jobs/job_model.ts",
    from:
      "  if (held === undefined || spec === undefined || held.webhookId === undefined) return true;",
    to: '  if (held === undefined || spec === undefined || held.webhookId !== "~") return true;',
    tests: ["tests/jobs/event_table_test.ts"],
  },
  {
    name: "dead-letters-list-stubs",
    breaks: "a dead stub (no spec) is left out of the dead-letter list",
    file: "src/jobs/job_table.ts",
    from: "      if (entry !== undefined && !isStub(entry)) {\n        items.push(entry);",
    to: "      if (entry !== undefined) {\n        items.push(entry);",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "sim-retry-lost-unchecked",
    breaks: "the simulator's checker fails an acknowledged retry never delivered nor dead again",
    file: "src/sim/cluster_sim_checker.ts",
    from: "    if (!delivered && !diedAfter) {",
    to: "    if (!delivered && diedAfter && !diedAfter) {",
    tests: ["tests/jobs/revive_sim_test.ts"],
  },
  {
    name: "delivered-guard-one-generation",
    breaks: "a delivered job's tombstone or kept key blocks records of every generation",
    file: "src/jobs/job_table.ts",
    from: 'const overGen = entry.phase === "delivered" ? ALL_GENERATIONS : entry.gen;',
    to: 'const overGen = entry.phase === "delivered" ? entry.gen : entry.gen;',
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "gone-keeps-stale-dead-letter",
    breaks: "a tombstone of a later generation drops a dead letter held of an earlier one",
    file: "src/jobs/job_table.ts",
    from: 'held.phase === "dead" && held.gen < gen)',
    to: 'held.phase === "dead" && held.gen < 0)',
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "revive-uncommitted-copy",
    breaks: "a dead letter held uncommitted is not retried through its node",
    file: "src/jobs/submit_path.ts",
    from: "    if (!entry.committed) {\n      // Its COMMIT has not reached this node yet",
    to: '    if (entry.jobId === "") {\n      // Its COMMIT has not reached this node yet',
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "voided-outcome-not-respread",
    breaks: "a replica holding a record its origin's restart voided sends it again",
    file: "src/jobs/incoming_records.ts",
    from: 'if (record.type === "skip") this.#respreadVoided(record);',
    to: 'if (record.type === "skip") void this.#respreadVoided;',
    tests: ["tests/jobs/voided_outcome_test.ts"],
  },
  {
    name: "voided-outcome-respread-unready",
    breaks: "a node still catching up gives no record a stamp of its own",
    file: "src/jobs/replication_core.ts",
    from:
      '    if (this.#phase === "catching_up") {\n      if (this.#respreadLater.length < this.config.originPendingMax) {\n        this.#respreadLater.push(record);\n      }\n      return;\n    }\n    if (this.#phase !== "ready" ||',
    to: '    if (this.#phase === "failed" ||',
    tests: ["tests/jobs/voided_outcome_test.ts"],
  },
  {
    name: "voided-outcome-dropped-while-catching-up",
    breaks: "a voided record that came while this node caught up is sent once it is ready",
    file: "src/jobs/replication_core.ts",
    from: "        this.#respreadLater.push(record);",
    to: "        void this.#respreadLater;",
    tests: ["tests/jobs/voided_outcome_test.ts"],
  },
  {
    name: "voided-outcome-resync-forgets",
    breaks: "a node resyncing after a freeze sends the voided records it put off",
    file: "src/jobs/replication_core.ts",
    from:
      'this.#log("resynced", { from: done.from, tookMs: done.tookMs });\n      this.#respreadDeferred();',
    to: 'this.#log("resynced", { from: done.from, tookMs: done.tookMs });',
    tests: ["tests/jobs/voided_outcome_test.ts"],
  },
  {
    name: "voided-record-sent-late",
    breaks: "a voided record is sent again only while the life it speaks of is open here",
    file: "src/jobs/replication_core.ts",
    from: "    if (!this.#stillOpen(record)) return;\n",
    to: "",
    tests: ["tests/jobs/voided_outcome_test.ts"],
  },
  {
    name: "voided-revive-not-respread",
    breaks: "a voided REVIVE is sent again by its holders",
    file: "src/jobs/incoming_records.ts",
    from: "new Set(VOIDED_RECORD_TYPES);",
    to: 'new Set(VOIDED_RECORD_TYPES.filter((type) => type !== "revive"));',
    tests: ["tests/jobs/voided_outcome_test.ts"],
  },
  {
    name: "respread-attempt-counted-again",
    breaks: "an attempt told again under another stamp counts once in its endpoint's health",
    file: "src/jobs/replication_core.ts",
    from: "    if (!attemptKnown) this.#noteAttempt(",
    to: "    if (attemptKnown || !attemptKnown) this.#noteAttempt(",
    tests: ["tests/jobs/voided_outcome_test.ts"],
  },
  {
    name: "revive-stale-acknowledged",
    breaks: "a replica past the generation a REVIVE starts answers it `finished`",
    file: "src/jobs/incoming_records.ts",
    from: 'status: stale ? "finished" : "ok"',
    to: 'status: stale ? "ok" : "ok"',
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "revive-other-start-acknowledged",
    breaks: "a replica whose generation another REVIVE started answers this one `finished`",
    file: "src/jobs/incoming_records.ts",
    from: "return startedBy !== undefined && startedBy.gen === gen &&",
    to: "return startedBy !== undefined && startedBy.gen === gen + 1 &&",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "revive-start-not-recorded",
    breaks: "a REVIVE answered again is voted for by the replica whose generation it started",
    file: "src/jobs/job_model.ts",
    from: "entry.reviveOf = { gen: record.gen, stamp: record.stamp };",
    to: "entry.reviveOf = { gen: record.gen, stamp: { origin: record.stamp.origin, seq: 0 } };",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "revive-claims-only-when-moving",
    breaks: "the first REVIVE of a generation applied claims it, whatever moved the generation",
    file: "src/jobs/job_model.ts",
    from: "if (entry.gen === record.gen && entry.reviveOf?.gen !== record.gen) {",
    to: "if (changed && entry.gen === record.gen && entry.reviveOf?.gen !== record.gen) {",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "pending-check-answer-unasked",
    breaks: "a pending check's answer ends only jobs this node asked about",
    file: "src/jobs/pending_checks.ts",
    from: "if (!this.#askedNow.has(jobId) && !this.#askedBefore.has(jobId)) continue;",
    to: 'if (jobId === "") continue;',
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-not-overdue",
    breaks:
      "a replica asks about a job only once it saw it overdue and unmoved for pendingCheckAfterMs",
    file: "src/jobs/pending_checks.ts",
    from: "if (wallMs < watched.sinceWallMs + watched.waitMs) return undefined;",
    to: "if (wallMs < watched.sinceWallMs) return undefined;",
    tests: ["tests/jobs/pending_check_test.ts", "tests/jobs/pending_checks_unit_test.ts"],
  },
  {
    name: "pending-check-no-backoff",
    breaks: "a job asked about and still pending is asked again after twice the wait",
    file: "src/jobs/pending_checks.ts",
    from: "watched.waitMs = Math.min(2 * watched.waitMs, this.#config.pendingCheckBackoffMaxMs);",
    to: "watched.waitMs = this.#config.pendingCheckAfterMs;",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-answer-not-written",
    breaks: "an end a pending check brought is written to the WAL",
    file: "src/jobs/pending_checks.ts",
    from: 'if (effect === "changed") this.#host.addToBatch(bytes, record);',
    to: 'if (effect === "changed" && bytes.length < 0) this.#host.addToBatch(bytes, record);',
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-owner-silent",
    breaks: "an owner answers a pending check with the end it holds",
    file: "src/jobs/pending_checks.ts",
    from:
      'return entry.phase === "pending" ? undefined : { type: "state", state: snapshotOf(entry) };',
    to: "return undefined;",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-tombstone-silent",
    breaks: "an owner that compacted the job answers a pending check with its tombstone",
    file: "src/jobs/pending_checks.ts",
    from: 'return gone !== undefined ? { type: "gone", gone } : undefined;',
    to: "return undefined;",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-ordered-tail",
    breaks: "of an ordered endpoint's jobs only the head is asked about",
    file: "src/jobs/pending_checks.ts",
    from:
      "if (spec.ordered === true && this.#host.orderedHead(key) !== entry.jobId) return undefined;",
    to: "if (spec.ordered === true && this.#host.orderedHead(key) === undefined) return undefined;",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-behind-owner-not-handed",
    breaks: "an owner that answers an earlier generation is handed the retry pending here",
    file: "src/jobs/pending_checks.ts",
    from: "if (handoffs.length > 0) {",
    to: "if (handoffs.length < 0) {",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-revive-overdue-at-once",
    breaks: "a job's unmoved time runs from when this node first saw it overdue, not its due time",
    file: "src/jobs/pending_checks.ts",
    from: "        sinceWallMs: wallMs,\n",
    to: "        sinceWallMs: dueWallMs(entry, spec),\n",
    tests: ["tests/jobs/pending_check_test.ts", "tests/jobs/pending_checks_unit_test.ts"],
  },
  {
    name: "pending-check-walk-from-head",
    breaks: "each walk goes on through the pending index where the last one stopped",
    file: "src/jobs/pending_checks.ts",
    from: "    let asked = 0;\n    for (let scanned = 0;",
    to: "    let asked = 0;\n    this.#cursor = undefined;\n    for (let scanned = 0;",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-tombstone-behind-not-handed",
    breaks: "an owner answering the tombstone of an earlier generation is handed the retry",
    file: "src/jobs/pending_checks.ts",
    from: "return { jobId: record.gone.jobId, gen: record.gone.gen };",
    to: "return { jobId: record.gone.jobId, gen: ALL_GENERATIONS };",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-older-guard",
    breaks: "an owner holding a tombstone and a key of a job answers with the later life's",
    file: "src/jobs/pending_checks.ts",
    from: "if (key !== undefined && (gone === undefined || (key.gen ?? 0) >= gone.gen)) {",
    to: "if (key !== undefined && gone === undefined) {",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-ordered-no-chain",
    breaks: "an answer that ends an ordered head asks about the next head at once",
    file: "src/jobs/pending_checks.ts",
    from: "    this.#askNextHeads(wallMs, endpointsMoved);\n",
    to: "",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "pending-check-cursor-kept-when-not-ready",
    breaks: "a walk that finds the node not ready lets its cursor go",
    file: "src/jobs/pending_checks.ts",
    from: "      this.#cursor = undefined;\n      return;\n",
    to: "      return;\n",
    tests: ["tests/jobs/pending_checks_unit_test.ts"],
  },
  {
    name: "state-revive-of-dropped",
    breaks: "a job's state names the REVIVE that claimed its generation",
    file: "src/jobs/job_model.ts",
    from: "? { reviveOf: entry.reviveOf }",
    to: "? {}",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "state-revive-of-not-adopted",
    breaks: "a replica that gets a generation by a state takes the REVIVE it names",
    file: "src/jobs/job_model.ts",
    from: "s.reviveOf !== undefined && s.reviveOf.gen === entry.gen &&",
    to: "s.reviveOf !== undefined && s.reviveOf.gen < 0 &&",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "codec-state-revive-of-unwritten",
    breaks: "a state record carries the REVIVE that claimed its generation",
    file: "src/jobs/job_codec.ts",
    from: "  if (s.reviveOf !== undefined) {\n    assert(",
    to: "  if (s.reviveOf !== undefined && s.gen < 0) {\n    assert(",
    tests: ["tests/jobs/job_codec_test.ts"],
  },
  {
    name: "codec-state-revive-of-gen-zero",
    breaks: "a generation-0 state's trailer is refused, not read as a REVIVE's claim",
    file: "src/jobs/job_codec.ts",
    from: '    if (gen === 0) throw new DecodeError("a state of generation 0 names no REVIVE");\n',
    to: "",
    tests: ["tests/jobs/job_codec_test.ts"],
  },
  {
    name: "state-revive-of-adopted-when-finished",
    breaks: "a state's REVIVE claim is adopted only while the generation is pending here",
    file: "src/jobs/job_model.ts",
    from: 'entry.phase === "pending" && entry.reviveOf?.gen !== entry.gen',
    to: "entry.reviveOf?.gen !== entry.gen",
    tests: ["tests/jobs/job_model_test.ts"],
  },
  {
    name: "pending-index-keeps-removed",
    breaks: "the table's pending index forgets a job that leaves the table",
    file: "src/jobs/job_table.ts",
    from: "    this.#pending.delete(entry.jobId);\n",
    to: "",
    tests: ["tests/jobs/pending_check_test.ts"],
  },
  {
    name: "retry-of-live-job-not-found",
    breaks: "a retry by hand of a pending or delivered job is refused 409, not 404",
    file: "src/jobs/submit_path.ts",
    from: '"not_dead_letter",',
    to: '"not_found",',
    tests: ["tests/jobs/contracts_test.ts"],
  },
  {
    name: "stub-deletes-key",
    breaks: "a later generation's stub leaves the key its dead letter left",
    file: "src/jobs/job_table.ts",
    from: "if (tombstone !== undefined && !isStub(entry)) this.#keys.delete(jobId);",
    to: "if (tombstone !== undefined) this.#keys.delete(jobId);",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "stub-hides-key",
    breaks: "a stub beside a kept key lets the key answer for its incarnation",
    file: "src/jobs/job_table.ts",
    from: 'if (entry === undefined || entry.spec === undefined) return "absent";',
    to:
      'if (entry === undefined) return "absent";\n      if (entry.spec === undefined) return undefined;',
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "stamp-from-losing-body",
    breaks: "a copy learns its SUBMIT's stamp only from a SUBMIT of its own body",
    file: "src/jobs/job_model.ts",
    from: "        if (!sameBody(entry, spec, spec.bodyHash)) {",
    to: "        if (entry.bodyHash !== spec.bodyHash) {",
    tests: ["tests/jobs/event_table_test.ts"],
  },
  {
    name: "sim-compacted-is-dead",
    breaks: "the simulator's checker takes a compacted job for dead only on an owner's report",
    file: "src/sim/cluster_sim_checker.ts",
    from: "      (!got2xx && compacted && sim.deadReportsOf(id).length > 0);",
    to: "      (!got2xx && compacted);",
    tests: ["tests/jobs/revive_sim_test.ts"],
  },
  {
    name: "revive-stale-at-first-finished",
    breaks: "a retry is refused stale only once no majority can vote for it",
    file: "src/jobs/proposals.ts",
    from: 'if (p.kind === "revive" && voters - p.finished.size < this.#quorum) {',
    to: 'if (p.kind === "revive" && p.finished.size > 0) {',
    tests: ["tests/jobs/proposals_test.ts"],
  },
  {
    name: "jobs-keyed-finished-no-tombstone",
    breaks: "a finished keyed job that leaves no key leaves a tombstone against its late records",
    file: "src/jobs/job_table.ts",
    from: 'if (entry.phase !== "pending" && !keyKept) {',
    to: 'if (entry.phase !== "pending" && !keyKept && !entry.jobId.startsWith("job_k")) {',
    tests: ["tests/jobs/job_table_test.ts", "tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "jobs-minority-delivers",
    breaks: "a node that sees no reachable majority delivers nothing (a partition's two sides)",
    file: "src/jobs/job_duties.ts",
    from: "        this.#ownership.reachableVoters() >= this.#quorum) &&",
    to: "        true) &&",
    tests: ["tests/jobs/minority_delivery_test.ts"],
  },
  {
    name: "jobs-deliver-without-majority-ignored",
    breaks: "deliverWithoutMajority keeps a node cut off from the majority delivering",
    file: "src/jobs/job_duties.ts",
    from: "      (this.#config.deliverWithoutMajority ||",
    to: "      (false ||",
    tests: ["tests/jobs/minority_delivery_test.ts"],
  },
  {
    name: "catchup-page-reasked-while-arriving",
    breaks: "a catch-up page still arriving part by part is not asked for again",
    file: "src/jobs/catchup_client.ts",
    from: "    ex.seen.add(m.part);\n    ex.waitFromMs = nowMs;\n",
    to: "    ex.seen.add(m.part);\n",
    tests: ["tests/jobs/review_found_test.ts"],
  },
  {
    name: "events-record-makes-no-missing-job",
    breaks: "an event held without its jobs (a broken-off snapshot) gets them from its own record",
    file: "src/jobs/job_table.ts",
    from: "        (jobId) => this.#entries.get(jobId)?.spec === undefined,",
    to: '        (jobId) => jobId === "",',
    tests: ["tests/jobs/event_table_test.ts"],
  },
  {
    name: "jobs-snapshot-finished-as-delivered",
    breaks: "a job a snapshot shows finished elsewhere is compacted, not called delivered",
    file: "src/jobs/catchup_client.ts",
    from: `      const record: JobRecord = {
        type: "gone",
        gone: {
          jobId: entry.jobId,
          gen: entry.gen,
          expiresAtMs: wallMs + this.#config.finishedTombstoneMs,
        },
      };`,
    // snapshotOf(entry) with the phase delivered, spelled out: catchup_client.ts does not
    // import snapshotOf, and the mutant must type-check there.
    to: `      const record: JobRecord = {
        type: "state",
        state: {
          jobId: entry.jobId,
          ...(entry.spec !== undefined ? { spec: entry.spec } : {}),
          ...(entry.submitStamp !== undefined ? { submitStamp: entry.submitStamp } : {}),
          bodyHash: entry.bodyHash,
          committed: entry.committed,
          gen: entry.gen,
          phase: "delivered",
          attemptsMade: entry.attemptsMade,
          nextAttemptAtMs: entry.nextAttemptAtMs,
          finishedAtMs: wallMs,
          deadReason: entry.deadReason,
          history: [],
        },
      };`,
    tests: ["tests/jobs/contracts_test.ts"],
  },
  {
    name: "dups-retry-while-listening",
    breaks: "a retry waits for the answer of its timed-out request still open (issue 17 §6)",
    file: "src/delivery/delivery_core.ts",
    from: "if (entry.listeningUntilMs > nowMs) {",
    to: "if (entry.listeningUntilMs < 0) {",
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "dups-late-2xx-ignored",
    breaks: "a 2xx heard after the timeout ends the job instead of a retry (issue 17 §6)",
    file: "src/delivery/delivery_core.ts",
    from: 'if (result.kind === "response" && result.status >= 200 && result.status < 300) {',
    to: 'if (result.kind === "response" && result.status < 0) {',
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "dups-late-2xx-after-cancel-ignored",
    breaks: "a late 2xx ends the job also after ownership moved it out of the engine",
    file: "src/delivery/delivery_core.ts",
    from: "    if (held) entry.listeningUntilMs = 0;",
    to: "    if (entry === undefined) return;\n    if (held) entry.listeningUntilMs = 0;",
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "dups-http-aborts-at-timeout",
    breaks: "the HTTP transport keeps a timed-out request open to hear its late answer",
    file: "src/delivery/http_transport.ts",
    from: "request.timeoutMs + listenMs,",
    to: "request.timeoutMs,",
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "dups-freeze-while-catching-up",
    breaks: "a node frozen while catching up catches up again before it turns ready",
    file: "src/jobs/replication_core.ts",
    from: 'if (this.#phase !== "ready" && this.#phase !== "catching_up") return;',
    to: 'if (this.#phase !== "ready") return;',
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "dups-catchup-on-majority-alone",
    breaks: "a catch-up waits (bounded) for every voter not held down, not a majority alone",
    file: "src/jobs/catchup_client.ts",
    from: "if (!straggling || nowMs >= waitEndsMs) {",
    to: "if (straggling || !straggling) {",
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "swim-gossip-wake-always",
    breaks: "an idle SWIM core arms no gossip timer (nothing queued, nobody suspected)",
    file: "src/membership/swim_core.ts",
    from: "return this.#gossip.size > 0 || this.#table.counts().suspect > 0;",
    to: "return true;",
    tests: ["tests/membership/swim_core_test.ts"],
  },
  {
    name: "swim-gossip-idle-loses-phase",
    breaks: "gossip queued after an idle spell leaves at the next boundary of the old phase",
    file: "src/membership/swim_core.ts",
    from:
      "this.#nextGossipMs += (Math.floor((now - this.#nextGossipMs) / intervalMs) + 1) * intervalMs;",
    to: "this.#nextGossipMs = now;",
    tests: ["tests/membership/swim_core_test.ts"],
  },
  {
    name: "stall-beat-after-callback",
    breaks: "a shell's timer that fires after a freeze runs the freeze's listeners before itself",
    file: "src/lib/stall_monitor.ts",
    from: "        this.#beat();\n        fn();",
    to: "        fn();\n        this.#beat();",
    tests: ["tests/lib/stall_monitor_test.ts"],
  },
  {
    name: "stall-far-timer-covers",
    breaks: "the monitor's own timer is needed unless a shell's timer is due within a period",
    file: "src/lib/stall_monitor.ts",
    from: "      if (dueMs <= beatByMs) return;",
    to: "      if (dueMs >= 0) return;",
    tests: ["tests/lib/stall_monitor_test.ts"],
  },
  {
    name: "stall-cancel-no-cover",
    breaks: "a shell's timer cancelled, not fired, brings the monitor's own timer back",
    file: "src/lib/stall_monitor.ts",
    from: "        this.#coverAtTurnEnd();\n      };",
    to: "      };",
    tests: ["tests/lib/stall_monitor_test.ts"],
  },
  {
    name: "stall-lazy-slack-ignored",
    breaks: "a lazy timer runs at most its slack late when no shell's timer beats by then",
    file: "src/lib/stall_monitor.ts",
    from: "      beatByMs = Math.min(beatByMs, timer.dueMs + timer.slackMs);",
    to: "      beatByMs = Math.min(beatByMs, timer.dueMs + this.#periodMs);",
    tests: ["tests/lib/stall_monitor_test.ts"],
  },
  {
    name: "stall-lazy-not-run-at-beat",
    breaks: "a lazy timer due runs at the first beat at or after its time",
    file: "src/lib/stall_monitor.ts",
    from: "      if (timer.dueMs > nowMs) continue;",
    to: "      if (timer.dueMs > nowMs - this.#periodMs) continue;",
    tests: ["tests/lib/stall_monitor_test.ts"],
  },
  {
    name: "http1-no-resend-on-stale-connection",
    breaks: "a POST whose reused connection closed before any answer is sent once more, fresh",
    file: "src/delivery/http1_client.ts",
    from: "return { ok: false, retryable: !reader.started, error: new Error(step.message) };",
    to: "return { ok: false, retryable: false, error: new Error(step.message) };",
    tests: ["tests/delivery/http1_client_test.ts"],
  },
  {
    name: "http1-resend-after-interim-answer",
    breaks: "a POST answered only by a 1xx before the close is not sent again: the receiver has it",
    file: "src/delivery/http1_response.ts",
    from: "if (bytes.length > 0) this.#anyBytes = true;",
    to: "if (bytes.length > 0 && this.#status >= 200) this.#anyBytes = true;",
    tests: ["tests/delivery/http1_client_test.ts"],
  },
  {
    name: "http1-idle-bytes-taken-as-answer",
    breaks: "bytes or a close on an idle connection retire it; they are never the next answer",
    file: "src/delivery/http1_client.ts",
    from: "      if (pooled.idle) this.#retire(pooled);",
    to: "      pooled.stale = false;",
    tests: ["tests/delivery/http1_client_test.ts"],
  },
  {
    name: "http1-reuse-after-cut-body",
    breaks: "a connection whose answer was cut at the drain bound is closed, never reused",
    file: "src/delivery/http1_response.ts",
    from:
      "          state.left -= n;\n          if (this.#cut) return this.#done(false);\n          continue;",
    to:
      "          state.left -= n;\n          if (this.#cut) return this.#done(this.#keepAlive);\n          continue;",
    tests: ["tests/delivery/http1_client_test.ts"],
  },
  {
    name: "http1-job-sets-host",
    breaks: "the client writes Host (the URL's) and Content-Length itself; a job's own are dropped",
    file: "src/delivery/http1_client.ts",
    from: 'new Set(["host", "content-length", "transfer-encoding", "connection"])',
    to: 'new Set(["transfer-encoding", "connection"])',
    tests: ["tests/delivery/http1_client_test.ts"],
  },
  {
    name: "dups-sync-serves-durable-only",
    breaks: "a sync answer carries every record the log holds, durable here or not yet",
    file: "src/jobs/sync_server.ts",
    from: "const to = Math.max(this.#tracker.max(origin), this.#log.max(origin));",
    to: "const to = this.#tracker.max(origin);",
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "dups-rescheduled-forgets-open-request",
    breaks: "a job that left the engine and came back waits for its open request's answer",
    file: "src/delivery/delivery_core.ts",
    from: "      listeningUntilMs: this.#openRequests.get(job.id) ?? 0,",
    to: "      listeningUntilMs: 0,",
    tests: ["tests/jobs/duplicates_test.ts"],
  },
  {
    name: "jobs-admission-ignores-quorum",
    breaks:
      "a submit is refused at once (no_quorum) while fewer than a quorum of voters are reachable",
    file: "src/jobs/submit_admission.ts",
    from: "if (state.reachableVoters < state.quorum) {",
    to: "if (state.reachableVoters < 0) {",
    tests: ["tests/jobs/submit_admission_test.ts"],
  },
  {
    name: "endpoints-answer-before-majority",
    breaks: "an endpoint write is answered (201/200) only once a majority holds it durably",
    file: "src/jobs/submit_path.ts",
    from: "    if (requestId !== undefined) proposal.endpointRequests.push(requestId);\n",
    to: "    if (requestId !== undefined) {\n" +
      '      this.#host.output({ type: "endpoint-done", requestId, outcome: { ok: true, ' +
      "endpoint: next.value } });\n    }\n",
    tests: ["tests/jobs/endpoint_replication_test.ts"],
  },
  {
    name: "endpoints-merge-by-arrival",
    breaks: "replicas merge an endpoint's values by version (last writer wins), not arrival",
    file: "src/jobs/endpoint_model.ts",
    from: "    ? (byVersion > 0 ? a : b)\n",
    to: "    ? b\n",
    tests: ["tests/jobs/endpoint_model_test.ts", "tests/jobs/endpoint_replication_test.ts"],
  },
  {
    name: "endpoints-version-from-clock-alone",
    breaks: "an endpoint write is stamped past the value its node held, whatever its clock says",
    file: "src/jobs/endpoint_model.ts",
    from: "Math.max(wallMs, current.version.atMs + 1)",
    to: "wallMs",
    tests: ["tests/jobs/endpoint_model_test.ts", "tests/jobs/endpoint_replication_test.ts"],
  },
  {
    name: "endpoints-write-from-local-value",
    breaks: "a PATCH or DELETE builds on the newest value a majority holds, not its node's own",
    file: "src/jobs/submit_path.ts",
    from: 'this.#table.apply({ type: "endpoint-state", state: round.newest }, wallMs);',
    to: '{ effect: "unchanged" as string };',
    tests: ["tests/jobs/endpoint_stale_write_test.ts"],
  },
  {
    name: "endpoints-read-two-answers",
    breaks: "an endpoint write's read waits for a majority of the voters' answers",
    file: "src/jobs/endpoint_reads.ts",
    from: "if (round.answered.size < this.#quorum) return undefined;",
    to: "if (round.answered.size < 2) return undefined;",
    tests: ["tests/jobs/endpoint_stale_write_test.ts"],
  },
  {
    name: "endpoints-snapshot-keeps-dropped",
    breaks: "a snapshot's requester drops its live copy of an endpoint its server dropped",
    file: "src/jobs/catchup_client.ts",
    from: "    this.#droppedEndpoints(nowMs, wallMs, endpointIds, held);\n",
    to: "",
    tests: ["tests/jobs/endpoint_replication_test.ts"],
  },
  {
    name: "events-partial-fanout",
    breaks: "an event record makes all of its jobs on every replica, or none (never part)",
    file: "src/jobs/job_table.ts",
    from: "    for (const job of body.jobs) {",
    to: "    for (const job of body.jobs.slice(0, 1)) {",
    tests: ["tests/jobs/event_replication_test.ts"],
  },
  {
    name: "events-commit-one-job",
    breaks: "an event's commit commits every one of its jobs",
    file: "src/jobs/job_table.ts",
    from: "      for (const jobId of eventJobIds(held.body)) {\n        const entry",
    to: "      for (const jobId of eventJobIds(held.body).slice(0, 1)) {\n        const entry",
    tests: ["tests/jobs/event_replication_test.ts"],
  },
  {
    name: "events-answer-before-majority",
    breaks: "an event is answered 202 only once it and all its jobs are durable on a majority",
    file: "src/jobs/submit_path.ts",
    from: '    this.#proposals.attach(proposal, request, "eventRequests");\n',
    to:
      "    done({ ok: true, id, type: body.event.type, jobs: body.jobs.length, existing: false });\n",
    tests: ["tests/jobs/event_replication_test.ts"],
  },
  {
    name: "events-keyed-no-other-answer",
    breaks: "a replica holding another live incarnation of a keyed event's key answers with it " +
      "(other_settled, other_live), not a vote: a retry across an epoch boundary makes no second event",
    file: "src/jobs/incoming_records.ts",
    from: "    const key = record.body.event.idempotencyKey;\n",
    to: "    const key = undefined as string | undefined;\n",
    tests: ["tests/jobs/event_idempotency_window_test.ts"],
  },
  {
    name: "events-keyed-no-move",
    breaks: "a keyed event's retry moves over to an unacknowledged first try of the previous " +
      "epoch (one window, one event)",
    file: "src/jobs/proposals.ts",
    from: 'if (p.earlierOther !== undefined && p.kind === "event" && p.event !== undefined) {',
    to:
      'if (p.earlierOther !== undefined && p.kind === "mutated" as string && p.event !== undefined) {',
    tests: ["tests/jobs/event_idempotency_window_test.ts"],
  },
  {
    name: "events-webhook-id-is-job-id",
    breaks: "every delivery of an event's job carries (and signs) the event's id as webhook-id",
    file: "src/delivery/types.ts",
    from: "  return job.webhookId ?? job.id;",
    to: "  return job.id;",
    tests: ["tests/delivery/engine_http_test.ts"],
  },
  {
    name: "ordered-by-arrival",
    breaks: "an ordered endpoint's jobs go in order-key order, not in the order they arrived",
    file: "src/jobs/ordered_queues.ts",
    from:
      "      if (compareOrderKeys(queue[mid]!.key, key) < 0) lo = mid + 1;\n      else hi = mid;",
    to: "      lo = mid + 1;",
    tests: ["tests/jobs/ordered_test.ts"],
  },
  {
    name: "ordered-schedules-more-than-head",
    breaks: "only an ordered endpoint's head is attempted",
    file: "src/jobs/job_duties.ts",
    from: "    if (head !== entry.jobId) return false;\n",
    to: "",
    tests: ["tests/jobs/ordered_test.ts", "tests/e2e/ordered_e2e_test.ts"],
  },
  {
    name: "ordered-owner-by-job-id",
    breaks: "an ordered endpoint's jobs have one owner, the rendezvous of the endpoint id",
    file: "src/jobs/job_model.ts",
    from: "  return jobId.slice(spec.webhookId.length + 1);",
    to: "  return jobId;",
    tests: ["tests/jobs/ordered_test.ts", "tests/e2e/ordered_e2e_test.ts"],
  },
  {
    name: "ordered-head-released-on-failure",
    breaks: "a failing head holds the jobs behind it until it is delivered or dead",
    file: "src/jobs/ordered_queues.ts",
    from: '    const order = entry.phase === "pending" ? orderOf(entry) : undefined;',
    to:
      '    const order = entry.phase === "pending" && entry.attemptsMade === 0\n      ? orderOf(entry)\n      : undefined;',
    tests: ["tests/jobs/ordered_test.ts", "tests/e2e/ordered_e2e_test.ts"],
  },
  {
    name: "ordered-no-barrier",
    breaks: "an ordered head is attempted only once an order barrier brought every earlier event",
    file: "src/jobs/job_duties.ts",
    from:
      "    if (wallMs >= settleWallMs) {\n      this.#host.orderBarrier(nowMs, settleWallMs);\n      return false;\n    }",
    to: "    if (wallMs >= settleWallMs) return true;",
    tests: ["tests/jobs/ordered_test.ts"],
  },
  {
    name: "ordered-no-settle-wait",
    breaks: "an ordered head waits until no node can stamp an earlier key (clock skew, proposals)",
    file: "src/jobs/job_duties.ts",
    from:
      "    const settleWallMs = order.key.atMs + this.#config.submitTimeoutMs +\n      this.#config.orderedClockSkewMs;",
    to: "    const settleWallMs = order.key.atMs;",
    tests: ["tests/jobs/ordered_test.ts", "tests/jobs/event_sim_test.ts"],
  },
  {
    name: "rate-limit-ignored",
    breaks: "an endpoint's job starts only with a token of its endpoint's bucket",
    file: "src/delivery/delivery_core.ts",
    from: "      if (held.bucket.take(nowMs)) {",
    to: "      if (held.bucket.take(nowMs) || held.heldLive >= 0) {",
    tests: ["tests/delivery/rate_limit_test.ts"],
  },
  {
    name: "rate-limit-share-undivided",
    breaks: "each owner of an endpoint's jobs takes only its share of the endpoint's rate",
    file: "src/jobs/job_store.ts",
    from: "    return endpoint.rateLimitPerS / Math.max(1, this.core.reachableVoters());",
    to: "    return endpoint.rateLimitPerS;",
    tests: ["tests/jobs/endpoint_rate_limit_test.ts"],
  },
  {
    name: "rate-limit-change-ignored",
    breaks: "a changed limit applies at once to the jobs its endpoint holds back",
    file: "src/delivery/delivery_core.ts",
    from: "      if (limit.heldLive > 0) this.#limitDue(nowMs, limit);",
    to: "      if (limit.heldLive < 0) this.#limitDue(nowMs, limit);",
    tests: ["tests/delivery/rate_limit_test.ts"],
  },
  {
    name: "endpoint-keyed-create-unread",
    breaks: "a keyed create reads its key's endpoint from a majority before it writes",
    file: "src/jobs/submit_path.ts",
    from: '    if (write.kind === "create") {\n      this.#proposeEndpoint(',
    to:
      '    if (write.kind === "create" || write.kind === "create-keyed") {\n      this.#proposeEndpoint(',
    tests: ["tests/jobs/endpoint_keyed_test.ts"],
  },
  {
    name: "endpoint-keyed-conflict-ignored",
    breaks: "a keyed create with another body than its key's endpoint is a conflict",
    file: "src/jobs/endpoint_keyed.ts",
    from: '  return canonicalText(comparable) === canonicalText(current) ? "same" : "different";',
    to: '  return canonicalText(comparable) !== "" ? "same" : "different";',
    tests: ["tests/jobs/endpoint_keyed_test.ts", "tests/api/endpoints_test.ts"],
  },
  {
    name: "endpoints-sign-with-spec-secret",
    breaks: "an event's attempt is signed under its endpoint's secrets valid at attempt time",
    file: "src/delivery/engine.ts",
    from: "      const secrets = this.#secretsFor?.(output.job);",
    to: "      const secrets = undefined;",
    tests: ["tests/delivery/engine_http_test.ts", "tests/jobs/event_sim_test.ts"],
  },
  {
    name: "endpoints-rotation-drops-old-secret",
    breaks: "during a rotation's overlap deliveries are signed under the old secret too",
    file: "src/jobs/endpoint_model.ts",
    from:
      '  if (s.previousSecret !== "" && wallMs < s.previousSecretUntilMs) out.push(s.previousSecret);',
    to: "",
    tests: ["tests/jobs/endpoint_model_test.ts", "tests/jobs/event_sim_test.ts"],
  },
  {
    name: "endpoints-410-not-disabling",
    breaks: "an attempt answered 410 makes its owner disable the endpoint ('gone')",
    file: "src/jobs/endpoint_health.ts",
    from: '      this.#disable(nowMs, wallMs, endpoint, "gone");',
    to: "      void 0;",
    tests: ["tests/jobs/endpoint_health_test.ts", "tests/jobs/event_sim_test.ts"],
  },
  {
    name: "endpoints-disable-keeps-pending-jobs",
    breaks: "an endpoint's disable turns the pending jobs its owners hold dead",
    file: "src/jobs/endpoint_health.ts",
    from: "    this.#disabledSince.add(endpointId);",
    to: "",
    tests: ["tests/jobs/endpoint_health_test.ts", "tests/jobs/event_sim_test.ts"],
  },
  {
    name: "endpoints-disabled-job-scheduled",
    breaks: "a job of a disabled endpoint is never handed to the delivery engine",
    file: "src/jobs/replication_core.ts",
    from: '        if (output.type === "schedule" && this.#health.holdBack(output.job.id)) return;',
    to: "",
    tests: ["tests/jobs/endpoint_health_test.ts"],
  },
  {
    name: "endpoints-failing-window-ignored",
    breaks: "a failure past the failing window disables the endpoint ('failing')",
    file: "src/jobs/endpoint_health.ts",
    from: '      this.#disable(nowMs, wallMs, endpoint, "failing");',
    to: "      void 0;",
    tests: ["tests/jobs/endpoint_health_test.ts"],
  },
  {
    name: "endpoints-success-not-recorded",
    breaks: "a delivery raises the endpoint's last success, restarting its failing window",
    file: "src/jobs/endpoint_health.ts",
    from: "      this.#raiseLastSuccess(nowMs, wallMs, endpoint);",
    to: "      void 0;",
    tests: ["tests/jobs/endpoint_health_test.ts"],
  },
  {
    name: "endpoints-success-undoes-write",
    breaks: "the last success is a max register beside the version: it never undoes a write",
    file: "src/jobs/endpoint_model.ts",
    from: "  const lastSuccessAtMs = Math.max(a.lastSuccessAtMs, b.lastSuccessAtMs);",
    to: "  const lastSuccessAtMs = winner.lastSuccessAtMs;",
    tests: ["tests/jobs/endpoint_model_test.ts"],
  },
  {
    name: "endpoints-recover-out-of-order",
    breaks: "recover revives an endpoint's dead jobs in event order",
    file: "src/jobs/endpoint_health.ts",
    from:
      "    a.atMs !== b.atMs ? a.atMs - b.atMs : a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0",
    to:
      "    a.atMs !== b.atMs ? b.atMs - a.atMs : a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0",
    tests: ["tests/jobs/endpoint_health_test.ts"],
  },
  {
    name: "endpoint-cli-add-secret-per-node",
    breaks: "hookd endpoint add repeats one body, its secret included, to every node it tries",
    file: "src/cli/endpoint.ts",
    from: "    body.secret ??= generateSecret();",
    to: "",
    tests: ["tests/cli/endpoint_cli_test.ts"],
  },
  {
    name: "endpoint-cli-add-unkeyed",
    breaks: "hookd endpoint add sends its create under an Idempotency-Key",
    file: "src/cli/endpoint.ts",
    from:
      '      { method: "POST", path: "/v1/endpoints", body, headers: { "idempotency-key": key } },',
    to: '      { method: "POST", path: "/v1/endpoints", body },',
    tests: ["tests/cli/endpoint_cli_test.ts"],
  },
  {
    name: "bench-fanout-sink-by-id",
    breaks: "the sink tells an event's deliveries to K endpoints apart (keyed by path and id)",
    file: "src/process/sink.ts",
    from: "  return `${path} ${id}`;",
    to: "  return id;",
    tests: ["tests/bench/sink_receipts_test.ts"],
  },
  {
    name: "bench-fanout-one-job-per-event",
    breaks: "a --fanout row counts every job of an event: K receipts per accepted event",
    file: "src/bench/sweep_row.ts",
    from: "    for (let k = 0; k < fanout; k++) {",
    to: "    for (let k = 0; k < Math.min(fanout, 1); k++) {",
    tests: ["tests/bench/sweep_row_test.ts"],
  },
  {
    name: "bench-fanout-knee-per-event",
    breaks: "a --fanout step is clean only when every job of every accepted event completed",
    file: "src/bench/sweep_report.ts",
    from: "row.completed === row.accepted * row.fanout",
    to: "row.completed >= row.accepted",
    tests: ["tests/bench/sweep_test.ts"],
  },
  {
    name: "bench-perf-any-unit",
    breaks: "perf's task clock is taken as ms only when perf says msec",
    file: "src/bench/perf_task_clock.ts",
    from: '    return fields[1] === "msec" ? value : undefined;',
    to: "    return value;",
    tests: ["tests/bench/perf_task_clock_test.ts"],
  },
  {
    name: "bench-perf-not-counted-as-reading",
    breaks: "a task clock perf could not count is no reading, not a figure",
    file: "src/bench/perf_task_clock.ts",
    from: '    if (fields[0] === "" || !Number.isFinite(value) || value < 0) return undefined;',
    to: '    if (fields[0] === "" || value < 0) return undefined;',
    tests: ["tests/bench/perf_task_clock_test.ts"],
  },
  {
    name: "bench-idle-perf-whole-cluster",
    breaks:
      "the idle perf figure is per node, like /proc's: the cluster's task clock over the nodes",
    file: "src/bench/cost_bench.ts",
    from: "      : round((cpu.perfMs / 1000 / windowS / ids.length) * 100, 2)!,",
    to: "      : round((cpu.perfMs / 1000 / windowS) * 100, 2)!,",
    tests: ["tests/bench/cost_test.ts"],
  },
  {
    name: "bench-skeleton-202-before-majority",
    breaks: "the skeleton answers a submit 202 only once a majority (itself included) holds it",
    file: "src/bench/skeleton_node.ts",
    from: "    if (waiting.durableHere && bitCount(waiting.voters) + 1 >= this.#majority) {",
    to: "    if (waiting.durableHere) {",
    tests: ["tests/bench/skeleton_node_test.ts"],
  },
  {
    name: "bench-skeleton-vote-counted-twice",
    breaks: "a replica's vote counts once toward the skeleton's majority, however often heard",
    file: "src/bench/skeleton_node.ts",
    from: "      waiting.voters |= 1 << from;",
    to: "      waiting.voters = waiting.voters * 2 + 1;",
    tests: ["tests/bench/skeleton_node_test.ts"],
  },
  {
    name: "bench-skeleton-datagram-over-size",
    breaks: "the skeleton packs a peer's entries into datagrams no larger than the datagram size",
    file: "src/bench/skeleton_wire.ts",
    from: "    if (bytes + entry.length > payloadBytesMax) {",
    to: "    if (bytes + entry.length > payloadBytesMax * 2) {",
    tests: ["tests/bench/skeleton_wire_test.ts"],
  },
  {
    name: "bench-cost-fsync-sleep-charged-as-cpu",
    breaks:
      "the cost model leaves a thread asleep in a synchronous fsync out of the CPU split (wall time, not CPU)",
    file: "src/bench/cpu_profile.ts",
    from: "        BLOCKING_OPS.has(frame.functionName)",
    to: '        BLOCKING_OPS.has(frame.functionName + "-never")',
    tests: ["tests/bench/cost_test.ts"],
  },
  {
    name: "node-alloc-sampler-garbage-left-out",
    breaks:
      "the allocation sampler counts the objects the GC collected while it sampled (a job's garbage)",
    file: "src/node/cpu_profiler.ts",
    from: "      includeObjectsCollectedByMinorGC: true,",
    to: "      includeObjectsCollectedByMinorGC: false,",
    tests: ["tests/node/cpu_profiler_test.ts"],
  },
  {
    name: "catchup-log-keeps-callers-view",
    breaks: "the catch-up log keeps a copy of each record, not a view that pins its datagram",
    file: "src/jobs/catchup_log.ts",
    from: "    const offset = this.#place(bytes);",
    to: "    const offset = bytes.byteOffset; this.#slab = new Uint8Array(bytes.buffer);",
    tests: ["tests/jobs/catchup_log_test.ts"],
  },
  {
    name: "catchup-log-slab-records-overlap",
    breaks: "records in a catch-up log slab do not overlap",
    file: "src/jobs/catchup_log.ts",
    from: "    this.#slabUsed += bytes.length;",
    to: "    this.#slabUsed += Math.max(0, bytes.length - 1);",
    tests: ["tests/jobs/catchup_log_test.ts"],
  },
  {
    name: "catchup-log-compaction-loses-base",
    breaks: "a record's position in the eviction order survives the order's compaction",
    file: "src/jobs/catchup_log.ts",
    from: "      this.#fifoBase += head;",
    to: "      this.#fifoBase += 0;",
    tests: ["tests/jobs/catchup_log_test.ts"],
  },
  {
    name: "endpoint-health-only-on-change",
    breaks:
      "a RETRY applied after its job's DONE still brings its attempt to the endpoint's health",
    file: "src/jobs/replication_core.ts",
    from: "    if (!attemptKnown) this.#noteAttempt(record, result.entry, wallMs);",
    to:
      '    if (!attemptKnown && result.effect === "changed") this.#noteAttempt(record, result.entry, wallMs);',
    tests: ["tests/jobs/endpoint_attempt_stats_test.ts"],
  },
  {
    name: "endpoint-health-from-spec",
    breaks: "an attempt counts for the endpoint its job id names, also before the job's body",
    file: "src/jobs/replication_core.ts",
    from: "    const endpointId = endpointOfJob(record.jobId);",
    to:
      "    const endpointId = entry.spec === undefined ? undefined : endpointOfJob(record.jobId);",
    tests: ["tests/jobs/endpoint_attempt_stats_test.ts"],
  },
  {
    name: "endpoint-health-window-ignored",
    breaks: "an endpoint's health counts only the attempts within its window",
    file: "src/jobs/endpoint_attempt_stats.ts",
    from: "      if (bucket <= fromBucket) continue;",
    to: "",
    tests: ["tests/jobs/endpoint_attempt_stats_test.ts"],
  },
  {
    name: "endpoint-health-backlog",
    breaks: "an ordered endpoint's backlog is every pending job queued for it here",
    file: "src/jobs/ordered_queues.ts",
    from: "    return this.#queues.get(endpointId)?.length ?? 0;",
    to: "    return this.#queues.has(endpointId) ? 1 : 0;",
    tests: ["tests/jobs/endpoint_attempt_stats_test.ts"],
  },
  {
    name: "dashboard-endpoint-header-values",
    breaks: "the dashboard's endpoints carry header names, never their values (credentials)",
    file: "src/jobs/job_store.ts",
    from: "    headerNames: Object.keys(s.headers).sort(),",
    to: "    headerNames: Object.entries(s.headers).map(([k, v]) => `${k}: ${v}`),",
    tests: ["tests/api/endpoint_health_test.ts"],
  },
  {
    name: "dashboard-endpoint-markup",
    breaks: "an endpoint's description reaches the dashboard as text, never as markup",
    file: "src/dashboard/static/app.js",
    from: "    description.textContent = e.description;",
    to: "    description.innerHTML = e.description;",
    tests: ["tests/dashboard/dashboard_xss_browser_test.ts"],
  },
  {
    name: "events-commit-lazy-to-owners",
    breaks: "an unkeyed event's commit goes at once to the owners of its jobs",
    file: "src/jobs/replication_core.ts",
    from: '|| this.#phase !== "ready" || eager?.has(peer) === true) {',
    to: '|| this.#phase !== "ready") {',
    tests: ["tests/jobs/event_replication_test.ts"],
  },
  {
    name: "bench-refusal-from-schedule",
    breaks: "a refusal's latency is the node's: from the submit's real send, not its schedule",
    file: "src/bench/load_generator.ts",
    from: "          refusal.record(nowMs - sentMs);",
    to: "          refusal.record(nowMs - scheduledMs);",
    tests: ["tests/bench/load_generator_test.ts"],
  },
  {
    name: "endpoints-read-shows-secret",
    breaks: "reads of an endpoint leave its signing secrets to GET /v1/endpoints/{id}/secret",
    file: "src/api/handler.ts",
    from: "    return read.ok ? jsonResponse(200, endpointJson(read.view, false)) : read.response;",
    to: "    return read.ok ? jsonResponse(200, endpointJson(read.view, true)) : read.response;",
    tests: ["tests/api/endpoints_test.ts"],
  },
  {
    name: "unheard-voter-dead-at-once",
    breaks:
      "a voter membership has not reported keeps its jobs for the grace (start-up duplicates)",
    file: "src/jobs/job_store.ts",
    from: `this.#runtime.nowMs() < this.#unheardUntilMs ? "unheard" : "dead";`,
    to: `"dead" as VoterState;`,
    tests: ["tests/jobs/sim_found_test.ts"],
  },
  {
    name: "unheard-voter-never-dead",
    breaks: "a voter still not reported after the grace is taken as dead (its jobs move)",
    file: "src/jobs/job_store.ts",
    from: `this.#runtime.nowMs() < this.#unheardUntilMs ? "unheard" : "dead";`,
    to: `"unheard" as VoterState;`,
    tests: ["tests/jobs/sim_found_test.ts"],
  },
  {
    name: "unheard-to-dead-keeps-owners",
    breaks: "unheard -> dead clears the owner cache (the voter stays down but its jobs move)",
    file: "src/jobs/ownership_view.ts",
    from: "wasDown(v) === this.isDown(v) && wasGone(v) === this.isGone(v)",
    to: "wasDown(v) === this.isDown(v)",
    tests: ["tests/jobs/sim_found_test.ts", "tests/jobs/owner_cache_test.ts"],
  },
  {
    name: "unheard-owner-loses-jobs",
    breaks: "an unheard voter keeps its jobs (ownership passes over gone voters only)",
    file: "src/jobs/ownership_view.ts",
    from: "return this.remember(jobId, ownerOf(jobId, this.#voters, (v) => this.isGone(v)));",
    to: "return this.remember(jobId, ownerOf(jobId, this.#voters, (v) => this.isDown(v)));",
    tests: ["tests/jobs/owner_cache_test.ts"],
  },
  {
    name: "mint-skips-unheard",
    breaks: "a minted id ranks the coordinator first among voters not gone, unheard ones included",
    file: "src/jobs/submit_path.ts",
    from: "if (ownerOf(id, this.#voters, (v) => this.#ownership.isGone(v)) === this.#self) {",
    to: "if (ownerOf(id, this.#voters, (v) => this.#ownership.isDown(v)) === this.#self) {",
    tests: ["tests/jobs/owner_cache_test.ts"],
  },
  {
    name: "sim-checker-unheard-forever",
    breaks: "the simulator's ownership history takes an unheard voter as dead past the grace",
    file: "src/sim/ownership_history.ts",
    from: "(!this.#heard.has(v) && atMs >= this.#unheardUntilMs)",
    to: "(!this.#heard.has(v) && atMs < 0)",
    tests: ["tests/sim/ownership_history_test.ts"],
  },
  {
    name: "endpoint-get-local-only",
    breaks:
      "a GET of an endpoint reads it from a majority (a write acknowledged elsewhere is seen)",
    file: "src/jobs/submit_path.ts",
    from: `this.#readEndpointFromMajority(nowMs, wallMs, requestId, { kind: "lookup", id });`,
    to: `this.#host.output({ type: "endpoint-read-done", requestId, outcome: { ok: true } });`,
    tests: ["tests/jobs/endpoint_stale_write_test.ts", "tests/jobs/endpoint_keyed_test.ts"],
  },
  {
    name: "endpoint-get-timeout-is-404",
    breaks:
      "a GET no majority answered in time is refused (503), not answered from this node alone",
    file: "src/jobs/submit_path.ts",
    from: "outcome: { ok: false, code, message, retryAfterS: 1 },",
    to: "outcome: { ok: true },",
    tests: ["tests/jobs/endpoint_stale_write_test.ts", "tests/jobs/endpoint_keyed_test.ts"],
  },
  {
    name: "api-endpoint-get-local",
    breaks: "GET /v1/endpoints/{id} asks the store's majority read, and answers its refusal 503",
    file: "src/api/handler.ts",
    from: "const read = await storeCall(() => service.readEndpoint(id));",
    to:
      "const read = await Promise.resolve(service.getEndpoint(id) ?? (await service.readEndpoint(id)));",
    tests: ["tests/api/endpoints_test.ts"],
  },
  {
    name: "key-order-queue-compaction-shifted",
    breaks: "a KeyOrderQueue's compaction moves every value with its key",
    file: "src/lib/key_order_queue.ts",
    from: "    this.#values.copyWithin(0, head, this.#end);",
    to: "    this.#values.copyWithin(0, head + 1, this.#end);",
    tests: ["tests/lib/key_order_queue_test.ts"],
  },
  {
    name: "key-order-queue-head-stays-on-hole",
    breaks: "a KeyOrderQueue's head moves past removed entries (first() is the lowest live key)",
    file: "src/lib/key_order_queue.ts",
    from:
      "    while (this.#head < this.#end && this.#values[this.#head] === undefined) this.#head++;",
    to: "",
    tests: ["tests/lib/key_order_queue_test.ts"],
  },
  {
    name: "repl-outbox-sent-mark-never-spent",
    breaks: "a message to a peer takes that peer's lazy records at the next flush only",
    file: "src/jobs/repl_outbox.ts",
    from: "    this.#flushes++;\n",
    to: "",
    tests: ["tests/jobs/repl_outbox_test.ts"],
  },
  {
    name: "string-cache-length-only",
    breaks: "a StringCache hit is bytes equal, in full, to those its string was decoded from",
    file: "src/lib/string_cache.ts",
    from: "if (key !== undefined && key.length === n && sameBytes(key, source, start, n)) {",
    to: "if (key !== undefined && key.length === n) {",
    tests: ["tests/lib/string_cache_test.ts"],
  },
  {
    name: "string-cache-keys-callers-buffer",
    breaks:
      "a StringCache keys a copy of the bytes, not the caller's buffer (reused for the next datagram)",
    file: "src/lib/string_cache.ts",
    from: "    this.#keys[slot] = source.slice(start, start + n);",
    to: "    this.#keys[slot] = source.subarray(start, start + n);",
    tests: ["tests/lib/string_cache_test.ts"],
  },
  {
    name: "finished-jobs-max-ignored",
    breaks: "a node keeps at most finishedJobsMax delivered jobs, the oldest leaving first",
    file: "src/jobs/job_table.ts",
    from: "      this.#deliveredExpiry.size - this.#options.finishedJobsMax,\n",
    to: "      0,\n",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "finished-jobs-max-evicts-stubs",
    breaks: "the delivered-job bound drops no finished stub (its SUBMIT would make it anew)",
    file: "src/jobs/job_table.ts",
    from: 'entry === undefined || entry.phase !== "delivered" || isStub(entry) ||',
    to: 'entry === undefined || entry.phase !== "delivered" ||',
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "tombstones-not-trimmed-at-expire",
    breaks: "each expire trims finished-job tombstones to finishedTombstonesMax",
    file: "src/jobs/job_table.ts",
    from: "    this.#trimGone(this.#options.finishedTombstonesMax);\n    return dropped;",
    to: "    return dropped;",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "tombstones-without-backstop",
    breaks: "tombstones never exceed twice their bound between two expires",
    file: "src/jobs/job_table.ts",
    from: "    if (this.#gone.size > 2 * this.#options.finishedTombstonesMax) {",
    to: "    if (this.#gone.size < 0) {",
    tests: ["tests/jobs/job_table_test.ts"],
  },
  {
    name: "node-started-without-v8-flags",
    breaks:
      "every hookd process self_command starts runs with HOOKD_V8_FLAGS (a 16-MiB young generation)",
    file: "src/process/self_command.ts",
    from: '      `--v8-flags=${HOOKD_V8_FLAGS.join(",")}`,\n',
    to: "",
    tests: ["tests/e2e/node_signal_e2e_test.ts"],
  },
  {
    name: "ack-only-counts-data",
    breaks:
      "hookd_transport_ack_only_datagrams_total counts only datagrams with nothing but an ack",
    file: "src/transport/session.ts",
    from:
      "if (chunks.length === 0 && unreliable === 0 && !piggybacked) ctx.counters.ackOnly.inc();",
    to: "if (unreliable === 0) ctx.counters.ackOnly.inc();",
    tests: ["tests/transport/endpoint_test.ts"],
  },
  {
    name: "confirm-from-dropped-payload",
    breaks:
      "a keyed retry to a replica whose copy was delivered before its COMMIT is refused, not confirmed from the copy without its payload",
    file: "src/jobs/submit_path.ts",
    from: "if (held?.spec !== undefined && held.payloadDropped) {",
    to: "if (false) {",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "decided-proposal-timers-kept",
    breaks:
      "deadlines of proposals already decided leave the timer heap's top (no wake-up for them)",
    file: "src/jobs/replication_core.ts",
    from:
      'if (top === undefined || top.kind !== "proposal" || this.#proposals.isOpen(top.key)) return;',
    to: "return;",
    tests: ["tests/jobs/lazy_send_test.ts"],
  },
  {
    name: "lazy-ack-on-retransmission",
    breaks: "a retransmission is never marked ack-may-wait: a lossy path needs its acks at once",
    file: "src/transport/sender.ts",
    from: "      chunks.push(c);\n      mayWait = false;\n",
    to: "      chunks.push(c);\n",
    tests: ["tests/transport/lazy_ack_test.ts"],
  },
  {
    name: "lazy-ack-without-quiet",
    breaks: "nothing is marked ack-may-wait for lazyAckQuietMs after a loss on the path",
    file: "src/transport/sender.ts",
    from: "nowMs - this.#lastLossMs >= this.#cfg.lazyAckQuietMs;",
    to: "nowMs - this.#lastLossMs >= 0;",
    tests: ["tests/transport/lazy_ack_test.ts"],
  },
  {
    name: "lazy-ack-no-probe-allowance",
    breaks: "a sender whose newest datagram is marked waits 2 × lazyAckMs longer before it probes",
    file: "src/transport/sender.ts",
    from: "return this.#lastElicitingAckMayWait ? 2 * this.#cfg.lazyAckMs : 0;",
    to: "return 0;",
    tests: ["tests/transport/lazy_ack_test.ts"],
  },
  {
    name: "lazy-ack-held-past-gap",
    breaks:
      "a marked datagram after a gap is acknowledged at once (the gap drives fast retransmit)",
    file: "src/transport/receiver.ts",
    from: "if (!mark.isNew || mark.gap || this.#ackPending >= this.#cfg.ackEveryPackets) {",
    to: "if (!mark.isNew || this.#ackPending >= this.#cfg.ackEveryPackets) {",
    tests: ["tests/transport/lazy_ack_test.ts"],
  },
  {
    name: "submit-ack-may-wait",
    breaks: "a replication message with a record someone waits for (a SUBMIT) is never marked",
    file: "src/jobs/replication_core.ts",
    from: "        this.#outbox.tookOnlyLazy(peer),",
    to: "        true,",
    tests: ["tests/jobs/lazy_send_test.ts"],
  },
  {
    name: "vote-ack-prompt",
    breaks: "votes are sent ack-may-wait: the COMMIT the proposer owes carries their ack",
    file: "src/jobs/replication_core.ts",
    from: 'ackMayWait: message.kind === "ack" }',
    to: 'ackMayWait: message.kind === ("none" as string) }',
    tests: ["tests/jobs/lazy_send_test.ts"],
  },
  {
    name: "settled-other-answered-when-closed",
    breaks:
      "a submit is not answered with another incarnation the replicas judged live at a first-submit time taken over from an earlier try, once its window has closed",
    file: "src/jobs/proposal_driver.ts",
    from: "!isLiveFor(other.submittedAtMs, this.#host.wallMs(), this.#config.idempotencyWindowMs)",
    to: "false",
    tests: ["tests/jobs/idempotency_window_test.ts"],
  },
  {
    name: "memory-reducer-left-on",
    breaks:
      "HOOKD_V8_FLAGS and deno.json's hookd and compile tasks agree: V8's memory reducer is off in both",
    file: "src/process/self_command.ts",
    from:
      'export const HOOKD_V8_FLAGS = ["--min-semi-space-size=16", "--no-memory-reducer"] as const;',
    to: 'export const HOOKD_V8_FLAGS = ["--min-semi-space-size=16"] as const;',
    tests: ["tests/process/self_command_test.ts"],
  },
  {
    name: "backlog-jobs-ignored",
    breaks: "past backlogJobsMax pending jobs a submit, an event or a revive is refused 503",
    file: "src/jobs/submit_admission.ts",
    from: "if (state.pendingJobs >= backlogJobsMax) {",
    to: "if (false) {",
    tests: ["tests/jobs/submit_admission_test.ts", "tests/jobs/backlog_admission_test.ts"],
  },
  {
    name: "backlog-bytes-ignored",
    breaks: "past backlogBytesMax of pending payloads a submit is refused 503",
    file: "src/jobs/submit_admission.ts",
    from: "if (state.backlogBytes >= backlogBytesMax) {",
    to: "if (false) {",
    tests: ["tests/jobs/submit_admission_test.ts", "tests/jobs/backlog_admission_test.ts"],
  },
  {
    name: "backlog-refuses-endpoint-writes",
    breaks: "an endpoint write (it makes no job) is never refused for the backlog",
    file: "src/jobs/submit_admission.ts",
    from: "  if (state.makesJobs) {",
    to: "  if (true) {",
    tests: ["tests/jobs/submit_admission_test.ts", "tests/jobs/backlog_admission_test.ts"],
  },
  {
    name: "backlog-flag-not-passed",
    breaks: "hookd node --backlog-max reaches the node's jobs config",
    file: "src/cli/node.ts",
    from: "      backlogJobsMax,\n",
    to: "",
    tests: ["tests/e2e/backlog_e2e_test.ts"],
  },
  {
    name: "payload-kept-counted-after-remove",
    breaks: "a job leaving the table takes its payload out of the backlog's count",
    file: "src/jobs/job_table.ts",
    from: "    this.#countPayload(entry, -1);\n    this.#entries.delete(entry.jobId);",
    to: "    this.#entries.delete(entry.jobId);",
    tests: ["tests/jobs/backlog_accounting_test.ts"],
  },
  {
    name: "payload-counted-per-event-job",
    breaks: "an event's payload counts once, not once per pending job of it",
    file: "src/jobs/job_table.ts",
    from: "    const eventId = entry.spec!.webhookId;\n",
    to: "    const eventId = undefined as string | undefined;\n",
    tests: ["tests/jobs/backlog_accounting_test.ts"],
  },
  {
    name: "event-payload-uncounted-with-first-job",
    breaks: "an event's payload counts until its last pending job leaves",
    file: "src/jobs/job_table.ts",
    from: "        if (--held.jobs === 0) {",
    to: "        if (--held.jobs >= 0) {",
    tests: ["tests/jobs/backlog_accounting_test.ts"],
  },
  {
    name: "dead-letter-bytes-bound-ignored",
    breaks: "past deadLetterBytesMax the oldest dead letters go at the next expire",
    file: "src/jobs/job_table.ts",
    from: "if (this.#deadLetterBytes > this.#deadLetterBytesMax) {",
    to: "if (this.#deadLetterBytes < 0) {",
    tests: ["tests/jobs/backlog_accounting_test.ts"],
  },
  {
    name: "dead-letter-trim-evicts-stubs",
    breaks: "the dead letters' byte bound drops only dead letters that hold bytes",
    file: "src/jobs/job_table.ts",
    from: "        if (entry !== undefined && entry.spec === undefined) continue;\n",
    to: "",
    tests: ["tests/jobs/backlog_accounting_test.ts"],
  },
  {
    name: "backlog-counts-payload-only",
    breaks: "a job's URL, headers and secrets count in the backlog with its payload",
    file: "src/jobs/job_table.ts",
    from: "  let units = spec.url.length;",
    to: "  let units = 0;\n  if (units > 0) return 0;",
    tests: ["tests/jobs/backlog_accounting_test.ts"],
  },
  {
    name: "dead-letter-bound-not-passed",
    breaks: "jobs.deadLetterBytesMax reaches the job table",
    file: "src/jobs/replication_core.ts",
    from: "      deadLetterBytesMax: this.config.deadLetterBytesMax,\n",
    to: "",
    tests: ["tests/jobs/backlog_admission_test.ts"],
  },
  {
    name: "backlog-refuses-keyed-retry",
    breaks: "under a full backlog a keyed retry of a job held is answered with it",
    file: "src/jobs/submit_path.ts",
    from: "    const refusal = this.#admission(nowMs, live === undefined);",
    to: "    const refusal = this.#admission(nowMs, true);",
    tests: ["tests/jobs/backlog_admission_test.ts"],
  },
  {
    name: "backlog-refuses-event-without-jobs",
    breaks: "under a full backlog an event no endpoint takes is still recorded",
    file: "src/jobs/submit_path.ts",
    from: "const refusal = this.#admission(nowMs, jobs.length > 0 && live === undefined);",
    to: "const refusal = this.#admission(nowMs, live === undefined);",
    tests: ["tests/jobs/backlog_admission_test.ts"],
  },
  {
    name: "dead-letter-bytes-bound-one-pass-short",
    breaks: "the dead letters' payload bound evicts as many as it takes, not one an expire",
    file: "src/jobs/job_table.ts",
    from: "        if (this.#deadLetterBytes <= this.#deadLetterBytesMax) break;\n",
    to: "        break;\n",
    tests: ["tests/jobs/backlog_accounting_test.ts"],
  },
  {
    name: "utf8-lax-decode-unchecked",
    breaks: "a string field that is not UTF-8 is refused, however it is decoded",
    file: "src/lib/bytes.ts",
    from: '  if (decoded.indexOf("\\uFFFD") < 0) return decoded;\n',
    to: "  return decoded;\n",
    tests: ["tests/lib/bytes_test.ts"],
  },
  {
    name: "wal-pace-ignored",
    breaks: "while appends come in a stream the WAL's writer waits for company before an fsync",
    file: "src/wal/wal.ts",
    from: 'this.#config.syncMode === "batched" ? this.#config.syncPaceMsMax : 0,',
    to: "0,",
    tests: ["tests/wal/sync_pace_test.ts"],
  },
  {
    name: "wal-pace-without-stream",
    breaks: "an append that finds the WAL's writer idle is written at once: a lone one never waits",
    file: "src/wal/sync_pace.ts",
    from: "if (paceMaxMs <= 0 || !queuedDuringSync) return 0;",
    to: "if (paceMaxMs <= 0) return 0;",
    tests: ["tests/wal/sync_pace_test.ts"],
  },
  {
    name: "wal-pace-counts-leftovers",
    breaks: "only appends that came during an fsync make a stream, not those a batch's bounds left",
    file: "src/wal/wal.ts",
    from: "    this.#queuedDuringSync = this.#queue.length > queuedBefore;",
    to: "    this.#queuedDuringSync = this.#head < this.#queue.length;",
    tests: ["tests/wal/sync_pace_test.ts"],
  },
  {
    name: "wal-pace-flag-outlives-checkpoint",
    breaks: "after a checkpoint the writer judges the stream afresh: a lone append is not paced",
    file: "src/wal/wal.ts",
    from: "          this.#queuedDuringSync = false;\n",
    to: "",
    tests: ["tests/wal/sync_pace_test.ts"],
  },
  {
    name: "wal-checkpoint-blocks-appends",
    breaks: "appends after a checkpoint's cut are written while its snapshot is, not behind it",
    file: "src/wal/wal.ts",
    from: "          await this.#startCheckpoint(first);\n",
    to: "          await this.#startCheckpoint(first);\n          await this.#checkpointTask;\n",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-no-yield",
    breaks: "a checkpoint's snapshot yields a macrotask between slices",
    file: "src/wal/wal.ts",
    from:
      "        if (!done) await new Promise<void>((resolve) => this.#clock.setTimer(0, resolve));\n",
    to: "",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-no-periodic-sync",
    breaks: "a checkpoint's segment is synced every checkpointSyncBytes while it is written",
    file: "src/wal/wal.ts",
    from: "if (!done && unsyncedBytes >= this.#config.checkpointSyncBytes) {",
    to: "if (!done && unsyncedBytes < 0) {",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-reclaims-before-sync",
    breaks: "a checkpoint is durable in full before the segments it makes obsolete are removed",
    file: "src/wal/wal.ts",
    from:
      "      // would block it for as long as the disk takes.\n      await target.file.syncData(true);\n",
    to: "      // would block it for as long as the disk takes.\n",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-caller-failure-fails-wal",
    breaks: "a snapshot the caller cannot produce fails that checkpoint only, not the WAL",
    file: "src/wal/wal.ts",
    from: "      if (!(error instanceof SnapshotSourceError)) {",
    to: "      if (!(error instanceof SnapshotSourceError) || error.cause instanceof Error) {",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-void-segment-removed",
    breaks:
      "a checkpoint its caller failed keeps its segment: removing it leaves a gap before the data segment made at its cut",
    file: "src/wal/wal.ts",
    from: "      // segment. The next checkpoint reclaims it with the segments before it.\n",
    to: "      // segment. The next checkpoint reclaims it with the segments before it.\n" +
      "      await this.#fs.remove(joinPath(this.#dir, segmentFileName(target.index)));\n" +
      "      await this.#fs.syncDir(this.#dir);\n",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-void-segment-unlisted",
    breaks:
      "a checkpoint's segment is listed from its cut on, so the next checkpoint reclaims it even if it fails",
    file: "src/wal/wal.ts",
    from: "    this.#segments.push({ index, name: segmentFileName(index) });\n    try {",
    to: "    try {",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-close-early",
    breaks: "close() waits for the checkpoint being written beside the appends",
    file: "src/wal/wal.ts",
    from: "      await this.#checkpointTask;\n      this.#file.close();",
    to: "      this.#file.close();",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-torn-middle-removed",
    breaks:
      "recovery keeps a torn checkpoint with data segments after it (removing it leaves a gap)",
    file: "src/wal/recovery.ts",
    from: "  if (tornIsNewest) {\n    const { segment, sizeBytes } = torn[0]!;\n",
    to: "  for (const t of torn) {\n" +
      "    if (tornIsNewest && t === torn[0]) continue;\n" +
      "    await dropSegment(fs, dir, report, {\n" +
      "      segment: t.segment.name,\n" +
      "      offset: 0,\n" +
      "      droppedBytes: t.sizeBytes,\n" +
      '      reason: "torn checkpoint",\n' +
      "    });\n" +
      "  }\n" +
      "  if (tornIsNewest) {\n    const { segment, sizeBytes } = torn[0]!;\n",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-torn-never-reclaimed",
    breaks: "a torn checkpoint kept by recovery is listed for the next checkpoint to reclaim",
    file: "src/wal/recovery.ts",
    from: "    segments: segments.slice(start)\n" +
      "      .filter((s) => !tornIsNewest || s !== segments.at(-1))\n",
    to: "    segments: live\n",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "wal-checkpoint-torn-any-first-lsn",
    breaks: "an incomplete checkpoint counts as torn only before the data segment made at its cut",
    file: "src/wal/recovery.ts",
    from: " ||\n        after.header!.firstLsn !== segment.header!.firstLsn)",
    to: ")",
    tests: ["tests/wal/wal_checkpoint_test.ts"],
  },
  {
    name: "utf8-fatal-decode-strips-bom",
    breaks: "a string beginning with U+FEFF and holding a U+FFFD reads back whole",
    file: "src/lib/bytes.ts",
    from: 'const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });',
    to: 'const fatalDecoder = new TextDecoder("utf-8", { fatal: true });',
    tests: ["tests/lib/bytes_test.ts"],
  },
  {
    name: "utf8-decode-strips-bom",
    breaks: "a string beginning with U+FEFF reads back whole",
    file: "src/lib/bytes.ts",
    from: 'const laxDecoder = new TextDecoder("utf-8", { ignoreBOM: true });',
    to: 'const laxDecoder = new TextDecoder("utf-8");',
    tests: ["tests/lib/bytes_test.ts"],
  },
  {
    name: "utf8-inplace-takes-high-bytes",
    breaks: "a short string field with non-ASCII bytes decodes as UTF-8, not byte by byte",
    file: "src/lib/bytes.ts",
    from: "      if (c >= 0x80) {\n",
    to: "      if (c > 0xff) {\n",
    tests: ["tests/lib/bytes_test.ts"],
  },
  {
    name: "utf8-inplace-ignores-field-offset",
    breaks: "a short string field read in place is the field's bytes, wherever it sits",
    file: "src/lib/bytes.ts",
    from: "      const c = source[start + i]!;\n",
    to: "      const c = source[i]!;\n",
    tests: ["tests/lib/bytes_test.ts"],
  },
  {
    name: "string-cache-hit-ignores-field-offset",
    breaks: "a cache hit is bytes equal to the field's own, compared where the field sits",
    file: "src/lib/string_cache.ts",
    from: "  for (let i = 0; i < n; i++) if (key[i] !== source[start + i]) return false;\n",
    to: "  for (let i = 0; i < n; i++) if (key[i] !== source[i]) return false;\n",
    tests: ["tests/lib/string_cache_test.ts"],
  },
  {
    name: "reader-last-read-runs-on",
    breaks: "a record read on its own (`lastRead`) ends where the record ends, not the message",
    file: "src/lib/bytes.ts",
    from: "    return new ByteReader(this.#bytes, this.#view, this.#offset - n, this.#offset);\n",
    to: "    return new ByteReader(this.#bytes, this.#view, this.#offset - n, this.#end);\n",
    tests: ["tests/lib/bytes_test.ts", "tests/jobs/job_codec_test.ts"],
  },
  {
    name: "codec-spec-drops-webhook-id",
    breaks: "a decoded spec carries its event's id and ordering, set after the literal",
    file: "src/jobs/job_codec.ts",
    from: "  if (webhookId !== undefined) spec.webhookId = webhookId;\n",
    to: "",
    tests: ["tests/jobs/job_codec_test.ts", "tests/jobs/event_codec_test.ts"],
  },
  {
    name: "mint-id-codes-shared",
    breaks: "a minted id is the hex its draws make, whatever id was minted before",
    file: "src/jobs/submit_path.ts",
    from: "  for (let i = 0; i < prefix.length; i++) codes[i] = prefix.charCodeAt(i);\n",
    to: "",
    tests: ["tests/jobs/random_id_test.ts"],
  },
  {
    name: "transport-address-by-port-alone",
    breaks: "a datagram's sender is its host and port, not the last peer heard on that port",
    file: "src/transport/udp_transport.ts",
    from: "    return this.#heardFrom.get(from.hostname)?.get(from.port);\n",
    to: "    return [...this.#heardFrom.values()][0]?.get(from.port);\n",
    tests: ["tests/transport/udp_transport_test.ts"],
  },
  {
    name: "transport-address-kept-before-auth",
    breaks: "only a source that authenticated is kept: forged sources cannot fill the cache",
    file: "src/transport/udp_transport.ts",
    from:
      "        if (this.endpoint.receive(this.#runtime.nowMs(), address, data)) {\n          // Kept only once a datagram from it authenticated: forged sources cannot fill it.\n          if (kept === undefined) this.#keepAddress(from, address);\n",
    to:
      "        if (kept === undefined) this.#keepAddress(from, address);\n        if (this.endpoint.receive(this.#runtime.nowMs(), address, data)) {\n",
    tests: ["tests/transport/udp_transport_test.ts"],
  },
  {
    name: "transport-key-id-partly-read",
    breaks: "a sender's identity before any cryptography is its whole key id, all 16 bytes",
    file: "src/transport/endpoint.ts",
    from: "    const id = KEY_IDS.get(datagram, KEY_ID_OFFSET, KEY_ID_BYTES, latin1);\n",
    to: "    const id = KEY_IDS.get(datagram, KEY_ID_OFFSET, KEY_ID_BYTES - 4, latin1);\n",
    tests: ["tests/transport/endpoint_test.ts", "tests/transport/replay_test.ts"],
  },
  {
    name: "reader-nested-last-read-unbounded",
    breaks: "a part's own part never starts before the part does",
    file: "src/lib/bytes.ts",
    from: "    if (!(Number.isInteger(n) && n >= 0 && n <= this.#offset - this.#start)) {\n",
    to: "    if (!(Number.isInteger(n) && n >= 0 && n <= this.#offset)) {\n",
    tests: ["tests/lib/bytes_test.ts"],
  },
  {
    name: "repl-message-always-undecodable",
    breaks: "a replication message that decoded whole says nothing of undecodable records",
    file: "src/jobs/job_messages.ts",
    from: "        m = undecodable.count > 0\n",
    to: "        m = undecodable.count >= 0\n",
    tests: ["tests/jobs/record_tolerance_test.ts", "tests/jobs/job_codec_test.ts"],
  },
  {
    name: "aead-nonce-counter-misread",
    breaks: "a datagram's nonce is its own counter's 8 bytes, all of them",
    file: "src/transport/datagram_crypto.ts",
    from: "  for (let i = 0; i < 8; i++) nonce[4 + i] = datagram[COUNTER_OFFSET + i]!;\n",
    to: "  for (let i = 0; i < 7; i++) nonce[4 + i] = datagram[COUNTER_OFFSET + i]!;\n",
    tests: ["tests/transport/datagram_crypto_test.ts", "tests/lib/sodium_test.ts"],
  },
  {
    name: "frame-u53-unbounded",
    breaks: "a counter or packet number past 2^53 - 1 is refused, not read as a rounded number",
    file: "src/transport/frame_codec.ts",
    from: "  const hi = u32At(b, at + 4);\n  if (hi > U53_HIGH_MAX) return undefined;\n",
    to: "  const hi = u32At(b, at + 4);\n",
    tests: ["tests/transport/frame_codec_test.ts"],
  },
  {
    name: "frame-counter-high-word-dropped",
    breaks: "a datagram's counter is written whole, its high word too",
    file: "src/transport/frame_codec.ts",
    from: "  u32Into(datagram, 24, Math.floor(counter / TWO_32));\n",
    to: "",
    tests: ["tests/transport/datagram_crypto_test.ts", "tests/transport/frame_codec_test.ts"],
  },
  {
    name: "frame-node-id-lax",
    breaks: "a datagram whose node id is not UTF-8 is refused",
    file: "src/transport/frame_codec.ts",
    from: "  return utf8Strict.decode(source.subarray(start, start + n));\n",
    to: "  return new TextDecoder().decode(source.subarray(start, start + n));\n",
    tests: ["tests/transport/frame_codec_test.ts"],
  },
  {
    name: "frame-finish-keeps-stale-tail",
    breaks: "a datagram finished without a seal ends in zeros, not the last datagram's bytes",
    file: "src/transport/frame_codec.ts",
    from: "    out.fill(0, this.#pos);\n",
    to: "",
    tests: ["tests/transport/frame_codec_test.ts"],
  },
  {
    name: "bench-sent-time-is-schedule",
    breaks: "the ids file logs the submit's real send, so the generator's lateness shows apart",
    file: "src/bench/load_generator.ts",
    from: "[result.id, scheduledMs, nowMs, sentMs, index]",
    to: "[result.id, scheduledMs, nowMs, scheduledMs, index]",
    tests: ["tests/bench/load_generator_test.ts"],
  },
  {
    name: "latency-tsv-node-off-by-one",
    breaks: "each latency line names the node that took the submit",
    file: "src/bench/sweep.ts",
    from: "const node = targets[target];",
    to: "const node = targets[target + 1] ?? targets[0];",
    tests: ["tests/bench/latency_lines_test.ts"],
  },
  {
    name: "ids-line-logs-next-target",
    breaks: "the ids file names the node a submit went to, not the next one in the round",
    file: "src/bench/load_generator.ts",
    from: "[result.id, scheduledMs, nowMs, sentMs, index]",
    to: "[result.id, scheduledMs, nowMs, sentMs, target]",
    tests: ["tests/bench/load_generator_test.ts"],
  },
  {
    name: "ids-line-target-unchecked",
    breaks: "an ids line whose target is not a whole number is refused, not read as a node",
    file: "src/process/generator_protocol.ts",
    from: "  if (!/^\\d+$/.test(target)) return undefined;\n",
    to: "",
    tests: ["tests/process/ids_file_test.ts"],
  },
  {
    name: "checkpoint-expire-during-walk",
    breaks:
      "retention waits while a checkpoint's snapshot is drawn (a key or tombstone expired before the walk reached it is missing from the snapshot while a late record it blocked is replayed over it)",
    file: "src/jobs/replication_core.ts",
    from: "      if (!this.#recovery.checkpointPending) this.#expire(nowMs, wallMs);",
    to: "      this.#expire(nowMs, wallMs);",
    tests: ["tests/jobs/checkpoint_core_test.ts"],
  },
  {
    name: "checkpoint-expire-spins",
    breaks:
      "retention held by a pending checkpoint still moves its next round an interval on (else the core asks to be woken now, over and over)",
    file: "src/jobs/replication_core.ts",
    from: "    if (nowMs >= this.#expireAtMs) {\n" +
      "      this.#expireAtMs = nowMs + this.config.expireIntervalMs;\n" +
      "      if (!this.#recovery.checkpointPending) this.#expire(nowMs, wallMs);\n",
    to: "    if (nowMs >= this.#expireAtMs && !this.#recovery.checkpointPending) {\n" +
      "      this.#expireAtMs = nowMs + this.config.expireIntervalMs;\n" +
      "      this.#expire(nowMs, wallMs);\n",
    tests: ["tests/jobs/checkpoint_core_test.ts"],
  },
  {
    name: "checkpoint-bytes-forgotten",
    breaks:
      "bytes appended while a checkpoint is pending (after its cut) count toward the next one, not forgotten when it is done",
    file: "src/jobs/recovery.ts",
    from: "    if (snapshotBytes !== undefined) this.#lastSnapshotBytes = snapshotBytes;\n",
    to: "    if (snapshotBytes !== undefined) {\n" +
      "      this.#lastSnapshotBytes = snapshotBytes;\n" +
      "      this.#appendedBytesSinceCheckpoint = 0;\n" +
      "    }\n",
    tests: ["tests/jobs/checkpoint_core_test.ts"],
  },
  {
    name: "checkpoint-bytes-before-cut-counted",
    breaks: "the bytes a checkpoint covers (before its cut) do not count toward the next one",
    file: "src/jobs/recovery.ts",
    from: "      this.#bytesBeforeCut = this.#appendedBytesSinceCheckpoint;\n" +
      "      this.#appendedBytesSinceCheckpoint = 0;\n",
    to: "      this.#bytesBeforeCut = this.#appendedBytesSinceCheckpoint;\n",
    tests: ["tests/jobs/checkpoint_core_test.ts"],
  },
  {
    name: "checkpoint-failed-bytes-lost",
    breaks: "a failed checkpoint gives back the bytes before its cut: they still want a checkpoint",
    file: "src/jobs/recovery.ts",
    from: "    else this.#appendedBytesSinceCheckpoint += this.#bytesBeforeCut;\n",
    to: "",
    tests: ["tests/jobs/checkpoint_core_test.ts"],
  },
  {
    name: "checkpoint-meta-at-drain",
    breaks:
      "a checkpoint's meta (held seqs, next own seq) is taken at the cut, not once the walk of the table is over",
    file: "src/jobs/recovery.ts",
    from: "    const meta = encodeWalSingleInto(new ByteWriter(), {\n" +
      '      type: "meta",\n' +
      "      nextOwnSeq: this.#host.nextOwnSeq(),\n" +
      "      held: this.#tracker.summary(1 << 16),\n" +
      "    });\n" +
      "    const table = this.#table;\n",
    to: "    const host = this.#host;\n" +
      "    const tracker = this.#tracker;\n" +
      "    const inner = this.#table;\n" +
      "    let meta: Uint8Array = new Uint8Array(0);\n" +
      "    const table = {\n" +
      "      *snapshotRecordsOrBytes() {\n" +
      "        yield* inner.snapshotRecordsOrBytes();\n" +
      "        meta = encodeWalSingleInto(new ByteWriter(), {\n" +
      '          type: "meta",\n' +
      "          nextOwnSeq: host.nextOwnSeq(),\n" +
      "          held: tracker.summary(1 << 16),\n" +
      "        });\n" +
      "      },\n" +
      "    };\n",
    tests: ["tests/jobs/checkpoint_core_test.ts"],
  },
  {
    name: "checkpoint-table-drawn-at-cut",
    breaks:
      "a checkpoint's table records are drawn as the WAL writes them, a slice at a time, not all at the cut",
    file: "src/jobs/recovery.ts",
    from: "    const table = this.#table;\n    return (function* () {\n",
    // Archived jobs come as views of the archive: copied, as a caller that keeps them must.
    to: "    const records = Array.from(\n" +
      "      this.#table.snapshotRecordsOrBytes(),\n" +
      "      (r) => r instanceof Uint8Array ? r.slice() : r,\n" +
      "    );\n" +
      "    const table = { snapshotRecordsOrBytes: () => records };\n" +
      "    return (function* () {\n",
    tests: ["tests/jobs/checkpoint_core_test.ts"],
  },
  {
    name: "codec-wal-single-stale-length",
    breaks: "a checkpoint's record written into a reused writer carries its own length",
    file: "src/jobs/job_codec.ts",
    from: "  w.setU32(start - 4, recordBytes);\n",
    to: "",
    tests: ["tests/jobs/job_codec_test.ts"],
  },
  {
    name: "codec-wal-single-no-reset",
    breaks: "a reused writer starts each checkpoint record afresh, not after the last one",
    file: "src/jobs/job_codec.ts",
    from: "w.reset().u8(WAL_BATCH_MAGIC)",
    to: "w.u8(WAL_BATCH_MAGIC)",
    tests: ["tests/jobs/job_codec_test.ts"],
  },
  {
    name: "sweep-tmpfs-unnoted",
    breaks: "a sweep row measured with the WALs on tmpfs says so in its note",
    file: "src/bench/sweep_row.ts",
    from: "  if (options.walFsWarning !== undefined) notes.push(options.walFsWarning);\n",
    to: "",
    tests: ["tests/bench/sweep_row_test.ts"],
  },
  {
    name: "bench-tmpfs-not-refused",
    breaks: "hookd bench refuses to put the nodes' WALs on tmpfs without --allow-tmpfs",
    file: "src/bench/sweep.ts",
    from: "if (placement.memory !== undefined && options.allowTmpfs !== true) {",
    to: "if (placement.memory !== undefined && options.allowTmpfs === false) {",
    tests: ["tests/wal/wal_bench_test.ts"],
  },
  {
    name: "cost-tmpfs-not-refused",
    breaks: "hookd bench cost refuses to put the nodes' WALs on tmpfs without --allow-tmpfs",
    file: "src/bench/cost_bench.ts",
    from: "if (where.memory !== undefined && !allowTmpfs) {",
    to: "if (where.memory !== undefined && allowTmpfs) {",
    tests: ["tests/wal/wal_bench_test.ts"],
  },
  {
    name: "jobs-archive-apply-to-copy",
    breaks: "a record that changes an archived job changes the job, not only a decoded copy",
    file: "src/jobs/job_table.ts",
    from: '    if (typeof held === "number") this.#keepChanges(jobId, held, entry, effect);',
    to: "",
    tests: ["tests/jobs/job_archive_test.ts"],
  },
  {
    name: "jobs-archive-thaw-forever",
    breaks: "a job a record thawed is archived again, even when the record's effect was unchanged",
    file: "src/jobs/job_table.ts",
    from: "    this.#entries.set(jobId, entry);\n    this.#archiveQueue.push(",
    to: "    this.#entries.set(jobId, entry);\n    if (Math.random() > 2) this.#archiveQueue.push(",
    tests: ["tests/jobs/job_archive_test.ts"],
  },
  {
    name: "jobs-archive-history-merge-lost",
    breaks: "a record that changes an archived job's bytes without calling it a change is kept",
    file: "src/jobs/job_table.ts",
    from: "if (w.length === held.length && sameBytesAt(held, w.view(), 0)) return;",
    to: "return;",
    tests: ["tests/jobs/job_archive_test.ts"],
  },
  {
    name: "jobs-archive-slot-leak",
    breaks: "a job removed from the table frees its archive slot",
    file: "src/jobs/job_table.ts",
    from: '    if (typeof held === "number") this.#archive.free(held);\n    this.#entries.delete',
    to: "    this.#entries.delete",
    tests: ["tests/jobs/job_archive_test.ts"],
  },
  {
    name: "slab-drop-current",
    breaks: "the slab being filled is kept when its values are all freed",
    file: "src/lib/slab_store.ts",
    from: "if (values === 0 && slab !== this.#current) this.#drop(slab);",
    to: "if (values === 0) this.#drop(slab);",
    tests: ["tests/lib/slab_store_test.ts"],
  },
  {
    name: "submit-lone-surrogate-url",
    breaks: "a URL with an unpaired UTF-16 surrogate is accepted (the codec keeps U+FFFD for it)",
    file: "src/delivery/submit_validation.ts",
    from: 'if (!raw.isWellFormed()) return loneSurrogateRefusal("url");',
    to: "",
    tests: ["tests/jobs/submit_validation_test.ts"],
  },
  {
    name: "endpoint-lone-surrogate-description",
    breaks: "an endpoint's description with an unpaired UTF-16 surrogate is accepted",
    file: "src/api/endpoint_validate.ts",
    from: "if (!d.isWellFormed()) return",
    to: "if (Math.random() > 2) return",
    tests: ["tests/api/endpoints_test.ts"],
  },
  {
    name: "api-path-id-past-codec-bound",
    breaks: "an id in a path is bounded by 256 characters, not by what the codec carries",
    file: "src/api/handler.ts",
    from: "id.length > charsMax ||",
    to: "id.length > 256 ||",
    tests: ["tests/api/path_ids_test.ts"],
  },
  {
    name: "transport-node-id-bom-dropped",
    breaks: "the transport's decoder drops a node id's leading U+FEFF",
    file: "src/transport/frame_codec.ts",
    from: 'new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })',
    to: 'new TextDecoder("utf-8", { fatal: true })',
    tests: ["tests/transport/frame_codec_test.ts"],
  },
  {
    name: "swim-node-id-bom-dropped",
    breaks: "SWIM's decoder drops a node id's leading U+FEFF",
    file: "src/membership/codec.ts",
    from: 'new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })',
    to: 'new TextDecoder("utf-8", { fatal: true })',
    tests: ["tests/membership/codec_test.ts"],
  },
  {
    name: "transport-node-id-lone-surrogate",
    breaks: "a node id with an unpaired surrogate goes on the wire as U+FFFD",
    file: "src/transport/frame_codec.ts",
    from: 'if (!nodeId.isWellFormed()) return err("node id has an unpaired UTF-16 surrogate");',
    to: "",
    tests: ["tests/transport/frame_codec_test.ts"],
  },
  {
    name: "wal-batch-end-length-ignored",
    breaks: "recovery ignores the batch length a BatchEnd carries after damage",
    file: "src/wal/recovery.ts",
    from:
      "if (start !== undefined && start > damagedBatchStart && start >= SEGMENT_HEADER_BYTES) {",
    to: "if (start !== undefined && start > bytes.length) {",
    tests: ["tests/wal/wal_test.ts"],
  },
  {
    name: "wal-batch-end-own-batch-as-later",
    breaks: "the damaged batch's own BatchEnd counts as proof of a later batch",
    file: "src/wal/recovery.ts",
    from: "start > damagedBatchStart &&",
    to: "start >= damagedBatchStart &&",
    tests: ["tests/wal/wal_test.ts"],
  },
  {
    name: "jobs-archive-slice-not-followed",
    breaks: "a retention pass whose archive slice came back full schedules the next slice soon",
    file: "src/jobs/replication_core.ts",
    from: `        this.#archiveAtMs = this.table.archiveBacklogged
          ? nowMs + this.config.archiveSliceGapMs
          : Infinity;`,
    to: "        this.#archiveAtMs = Infinity;",
    tests: ["tests/jobs/job_archive_test.ts"],
  },
  {
    name: "jobs-archive-slice-wakes-idle",
    breaks: "once a slice comes back short the core waits for its retention pass, not a slice gap",
    file: "src/jobs/replication_core.ts",
    from: `      this.#archiveAtMs = this.table.archiveDue(wallMs)
        ? nowMs + this.config.archiveSliceGapMs
        : Infinity;`,
    to: `      this.table.archiveDue(wallMs);
      this.#archiveAtMs = nowMs + this.config.archiveSliceGapMs;`,
    tests: ["tests/jobs/job_archive_test.ts"],
  },
];

const TREE = ["deno.json", "deno.lock", "main.ts", "src", "tests", "bench"];
const TEST_TIMEOUT_MS = 600_000;

async function copyTree(from: string, to: string): Promise<void> {
  const out = await new Deno.Command("cp", { args: ["-r", ...TREE, to], cwd: from }).output();
  if (!out.success) {
    throw new Error(`copying the tree failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A run of `tests` on the unmutated tree: they must pass, or every mutant would look killed. */
function baselineOf(tests: string[]): Mutant {
  return { name: "baseline", breaks: "nothing", file: "main.ts", from: "", to: "", tests };
}

async function runMutant(root: string, m: Mutant): Promise<"killed" | "survived" | string> {
  const dir = await Deno.makeTempDir({ prefix: `hookd-mutant-${m.name}-` });
  try {
    await copyTree(root, dir);
    const path = `${dir}/${m.file}`;
    const text = await Deno.readTextFile(path);
    const at = text.indexOf(m.from);
    if (m.from !== "" && (at < 0 || text.indexOf(m.from, at + 1) >= 0)) {
      return `not applied: the text to replace is not in ${m.file} exactly once (the code moved; update the mutant)`;
    }
    await Deno.writeTextFile(path, text.slice(0, at) + m.to + text.slice(at + m.from.length));
    // A mutant that does not compile would "fail" every test without testing anything.
    const check = await new Deno.Command(Deno.execPath(), {
      args: ["check", m.file, ...m.tests],
      cwd: dir,
      stdout: "null",
      stderr: "null",
    }).output();
    if (!check.success) return "not applied: the mutated tree does not type-check";
    const child = new Deno.Command(Deno.execPath(), {
      args: ["test", "--allow-all", ...m.tests],
      cwd: dir,
      stdout: "null",
      stderr: "null",
      env: { NO_COLOR: "1" },
    }).spawn();
    const timer = setTimeout(() => child.kill("SIGKILL"), TEST_TIMEOUT_MS);
    const status = await child.status;
    clearTimeout(timer);
    return status.success ? "survived" : "killed";
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function main(args: string[]): Promise<number> {
  const root = new URL("..", import.meta.url).pathname;
  const chosen = MUTANTS.filter((m) => args.every((a) => m.name.includes(a)));
  if (chosen.length === 0) {
    console.error(
      `no mutant matches ${args.join(" ")}; names: ${MUTANTS.map((m) => m.name).join(", ")}`,
    );
    return 2;
  }
  const baseline = baselineOf([...new Set(chosen.flatMap((m) => m.tests))]);
  if (await runMutant(root, baseline) !== "survived") {
    console.log(
      `the chosen tests fail on the unmutated tree; fix them first: ${baseline.tests.join(" ")}`,
    );
    return 2;
  }
  console.log(`baseline: the ${baseline.tests.length} test files pass on the unmutated tree`);
  let bad = 0;
  for (const m of chosen) {
    const started = performance.now();
    const verdict = await runMutant(root, m);
    const s = ((performance.now() - started) / 1000).toFixed(0);
    if (verdict !== "killed") bad++;
    console.log(
      `${verdict === "killed" ? "killed  " : "SURVIVED"} ${m.name} (${s} s): ${m.breaks}` +
        (verdict === "killed" || verdict === "survived" ? "" : ` — ${verdict}`),
    );
  }
  console.log(`${chosen.length - bad} of ${chosen.length} mutants killed`);
  return bad === 0 ? 0 : 1;
}

Deno.exit(await main(Deno.args));
