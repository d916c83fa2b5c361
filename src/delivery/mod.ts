/**
 * The webhook delivery engine's public API. The job store drives it with `schedule` /
 * `cancel` and receives outcome reports through the `DeliveryStore` interface (types.ts states
 * which report must be durable before what).
 */

export { DeliveryEngine, deliveryEngineFor, type DeliveryEngineOptions } from "./engine.ts";
export { DeliveryCore, type DeliveryOutput } from "./delivery_core.ts";
export { type AttemptRequest, type AttemptTransport, HttpTransport } from "./http_transport.ts";
export { MemoryDeliveryStore } from "./memory_store.ts";
export { DeliveryMetrics } from "./metrics.ts";
export { decideRetry, parseRetryAfterMs, retryDelayMs } from "./retry_policy.ts";
export { decodeSecret, generateSecret, signatureHeader, webhookHeaders } from "./signing.ts";
export { checkJob, type JobLimits } from "./job_check.ts";
export { checkTarget, specialAddressReason } from "./ssrf_guard.ts";
export type * from "./types.ts";
