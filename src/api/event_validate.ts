/**
 * The decoder from untrusted JSON to the event `POST /v1/events` takes (docs/endpoints.md):
 * `{type, payload}`, each failure naming the field a client must fix.
 *
 * Owns the event request vocabulary. The type follows the rule of an endpoint's `event_types`
 * (`isEventType`), the payload the job's (any JSON, re-serialised compact with the client's
 * number texts, within `payloadBytesMax`: past it 413, as for a job). Pure: no I/O, no clock;
 * never throws on hostile input.
 */

import { ENDPOINT_LIMITS } from "../config/endpoints.ts";
import { payloadRefusal, type SubmitLimits } from "../delivery/submit_validation.ts";
import type { NumberTexts } from "./json_text.ts";
import { err, ok, type Result } from "../lib/result.ts";
import { isEventType } from "./endpoint_validate.ts";
import { describe, encodePayload, type FieldError, invalid, isPlainObject } from "./validate.ts";

/** The fields of an event's JSON body; any other is a 400. */
export const EVENT_FIELDS = ["type", "payload"] as const;

export interface DecodedEvent {
  readonly type: string;
  /** The payload as the JSON text every job of the event delivers. */
  readonly payload: string;
}

export function decodeEvent(
  value: unknown,
  limits: Pick<SubmitLimits, "payloadBytesMax">,
  numberTexts?: NumberTexts,
): Result<DecodedEvent, FieldError> {
  if (!isPlainObject(value)) {
    return invalid(undefined, `an event must be a JSON object, not ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!(EVENT_FIELDS as readonly string[]).includes(key)) {
      return invalid(
        key,
        `unknown field ${JSON.stringify(key.slice(0, 64))}; an event has ${
          EVENT_FIELDS.join(", ")
        }`,
      );
    }
  }
  if (!Object.hasOwn(value, "type")) {
    return invalid(
      "type",
      'type is required (the event type endpoints subscribe to, e.g. "invoice.paid")',
    );
  }
  if (!isEventType(value.type)) {
    const t = value.type;
    return invalid(
      "type",
      `type is 1-${ENDPOINT_LIMITS.eventTypeCharsMax} printable ASCII characters without ` +
        `spaces (e.g. "invoice.paid"), not ${
          typeof t === "string" ? JSON.stringify(t.slice(0, 64)) : describe(t)
        }`,
    );
  }
  if (!Object.hasOwn(value, "payload")) return invalid("payload", "payload is required (any JSON)");
  const payload = encodePayload(value, numberTexts);
  if (!payload.ok) return payload;
  const tooLarge = payloadRefusal(payload.value, limits.payloadBytesMax);
  if (tooLarge !== undefined) {
    return err({ code: "payload_too_large", message: tooLarge, field: "payload" });
  }
  return ok({ type: value.type, payload: payload.value });
}
