/**
 * SWIM membership with the Lifeguard extensions: the public API.
 *
 * Owns nothing but this list of re-exports. Ownership code reads a `MembershipView`; the node
 * runs a `SwimCore` inside a `MembershipService` on the transport. Simulations live with the
 * simulator (src/sim/swim_cluster.ts), not here.
 */

export {
  type MemberEvent,
  type MemberEventType,
  type MemberInfo,
  type MembershipView,
  SwimCore,
  type SwimCoreOptions,
  type SwimInput,
  type SwimOutput,
} from "./swim_core.ts";
export type { MemberState } from "./messages.ts";
export {
  MEMBERSHIP_CHANNEL,
  MembershipService,
  type MembershipServiceOptions,
  type MembershipTransport,
} from "./membership_service.ts";
export { detectionBoundMs, suspicionBounds } from "./suspicion_math.ts";
export {
  type MembershipConfig,
  membershipDefaults,
  validateMembershipConfig,
} from "../config/membership.ts";
