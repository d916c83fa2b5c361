import { deepStrictEqual, ok, throws } from "node:assert/strict";
import { parseCommandArgs, UsageError } from "../../src/process/args.ts";
import { transportFlags, transportOptionsFromFlags } from "../../src/cli/transport_flags.ts";

const spec = { name: "node", summary: "test", flags: transportFlags };
const noEnv = () => undefined;

Deno.test("transportOptionsFromFlags reads key, loss, seed and datagram size from flags", () => {
  const parsed = parseCommandArgs(spec, [
    "--cluster-key",
    "a-long-enough-cluster-key",
    "--loss",
    "0.2",
    "--loss-seed",
    "42",
    "--datagram-bytes",
    "9000",
  ]);
  deepStrictEqual(transportOptionsFromFlags(parsed.values, noEnv), {
    clusterKey: "a-long-enough-cluster-key",
    lossProbability: 0.2,
    lossSeed: 42,
    config: { datagramBytes: 9000 },
  });
});

Deno.test("transportOptionsFromFlags takes the key from HOOKD_CLUSTER_KEY and refuses none or a short one", () => {
  const none = parseCommandArgs(spec, []);
  const fromEnv = transportOptionsFromFlags(
    none.values,
    (name) => name === "HOOKD_CLUSTER_KEY" ? "key-from-the-environment" : undefined,
  );
  ok(fromEnv.clusterKey === "key-from-the-environment" && fromEnv.lossProbability === 0);
  throws(() => transportOptionsFromFlags(none.values, noEnv), UsageError);
  const short = parseCommandArgs(spec, ["--cluster-key", "short"]);
  throws(() => transportOptionsFromFlags(short.values, noEnv), UsageError);
  const badLoss = parseCommandArgs(spec, [
    "--cluster-key",
    "a-long-enough-cluster-key",
    "--loss",
    "2",
  ]);
  throws(() => transportOptionsFromFlags(badLoss.values, noEnv), UsageError);
});
