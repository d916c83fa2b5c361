/**
 * The chaos defaults keep the run meaningful, and a config that would make a fault test
 * nothing is refused by name.
 */

import { assertEquals, assertThrows } from "../assert.ts";
import { chaosDefaults, validateChaosConfig } from "../../src/chaos/chaos_config.ts";

Deno.test("validateChaosConfig takes the defaults and refuses configs that make faults test nothing", () => {
  assertEquals(validateChaosConfig({ ...chaosDefaults }), { ...chaosDefaults });
  // A slow receiver that answers within the attempt timeout causes no retry at all.
  assertThrows(() => validateChaosConfig({ ...chaosDefaults, slowReceiverMs: 1_000 }), RangeError);
  // Jobs that give up before the longest outage ends would be dead letters, not deliveries.
  assertThrows(() => validateChaosConfig({ ...chaosDefaults, jobMaxAttempts: 5 }), RangeError);
  assertThrows(
    () => validateChaosConfig({ ...chaosDefaults, stopMs: [14_000, 10_000] }),
    RangeError,
  );
  assertThrows(() => validateChaosConfig({ ...chaosDefaults, gapMs: [0, 5_000] }), RangeError);
  assertThrows(
    () => validateChaosConfig({ ...chaosDefaults, lossProbability: [0.2, 1.5] }),
    RangeError,
  );
});
