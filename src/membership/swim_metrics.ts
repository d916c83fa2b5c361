/**
 * The SWIM core's metrics: the counters and gauges it updates, registered once per core.
 *
 * Owns: metric names, help texts and labels. Must not: read or decide membership state (the
 * core, swim_core.ts, and the parts it delegates to update the values).
 */

import type { Counter, Gauge, MetricsRegistry } from "../metrics/registry.ts";
import type { MemberState } from "./messages.ts";

export interface SwimMetrics {
  probes: Counter;
  acks: Counter;
  nacks: Counter;
  indirectProbes: Counter;
  relayed: Counter;
  relayRefused: Counter;
  suspicionsRaised: Counter;
  suspicionsRefuted: Counter;
  selfRefutations: Counter;
  deadDeclared: Counter;
  lateWakes: Counter;
  refutationsRefused: Counter;
  decodeErrors: Counter;
  packetsIn: Counter;
  packetsOut: Counter;
  membersRefused: Counter;
  byState: Record<MemberState, Gauge>;
  awareness: Gauge;
}

export function registerSwimMetrics(reg: MetricsRegistry): SwimMetrics {
  const c = (name: string, help: string) => reg.counter(`hookd_membership_${name}`, help);
  return {
    probes: c("probes_total", "Direct probes started"),
    acks: c("acks_total", "Probes answered by an ack (direct or relayed)"),
    nacks: c("nacks_total", "Nacks received from indirect probers"),
    indirectProbes: c("indirect_probes_total", "Ping-req messages sent to relays"),
    relayed: c("relayed_probes_total", "Indirect probes relayed for other members"),
    relayRefused: c("relay_refused_total", "Ping-req refused: too many relays pending"),
    suspicionsRaised: c("suspicions_raised_total", "Members this node began to suspect"),
    suspicionsRefuted: c("suspicions_refuted_total", "Suspected members seen alive again"),
    selfRefutations: c("self_refutations_total", "Suspicions of this node it refuted"),
    deadDeclared: c("dead_declared_total", "Suspicion timeouts that declared a member dead"),
    lateWakes: c(
      "late_wakes_total",
      "Steps that came later than lateWakeToleranceMs past a deadline (this node stalled)",
    ),
    refutationsRefused: c(
      "refutations_refused_total",
      "Claims about this node at the last incarnation (forged or corrupt), not refuted",
    ),
    decodeErrors: c("decode_errors_total", "Membership packets that failed to decode"),
    packetsIn: c("packets_in_total", "Membership packets received"),
    packetsOut: c("packets_out_total", "Membership packets sent"),
    membersRefused: c("members_refused_total", "New members refused: table full"),
    byState: {
      alive: reg.gauge("hookd_membership_members", "Members per state", { state: "alive" }),
      suspect: reg.gauge("hookd_membership_members", "Members per state", { state: "suspect" }),
      dead: reg.gauge("hookd_membership_members", "Members per state", { state: "dead" }),
      left: reg.gauge("hookd_membership_members", "Members per state", { state: "left" }),
    },
    awareness: reg.gauge("hookd_membership_awareness_score", "Lifeguard local health score"),
  };
}
