import { equal, throws } from "node:assert/strict";
import {
  TRANSPORT_WINDOW_MESSAGES_MAX,
  type TransportConfig,
  transportDefaults,
  validateTransportConfig,
} from "../../src/config/transport.ts";

const withOverrides = (overrides: Partial<TransportConfig>) =>
  validateTransportConfig({ ...transportDefaults, ...overrides });

Deno.test("validateTransportConfig accepts the defaults", () => {
  equal(withOverrides({}).datagramBytes, transportDefaults.datagramBytes);
});

Deno.test("validateTransportConfig refuses a zero RTO floor and a window past the wire span", () => {
  throws(
    () => withOverrides({ rtoMinMs: 0 }),
    (e: unknown) => e instanceof RangeError && e.message.includes("rtoMinMs"),
  );
  throws(
    () => withOverrides({ windowMessages: TRANSPORT_WINDOW_MESSAGES_MAX + 1 }),
    (e: unknown) => e instanceof RangeError && e.message.includes("windowMessages"),
  );
  equal(
    withOverrides({ windowMessages: TRANSPORT_WINDOW_MESSAGES_MAX }).windowMessages,
    TRANSPORT_WINDOW_MESSAGES_MAX,
  );
});
