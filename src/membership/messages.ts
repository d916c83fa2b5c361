/**
 * The SWIM messages exchanged between members, as a discriminated union with small factories.
 *
 * Owns the message shapes and their field limits only; the byte layout lives in codec.ts and
 * the protocol logic in swim_core.ts.
 */

/** Longest node id in UTF-8 bytes. Short ids keep gossip small. */
export const NODE_ID_BYTES_MAX = 64;
/** Longest `host:port` address in UTF-8 bytes. */
export const ADDRESS_BYTES_MAX = 255;

export type MemberState = "alive" | "suspect" | "dead" | "left";

/** One row of a full state sync. */
export interface MemberRecord {
  nodeId: string;
  address: string;
  incarnation: number;
  state: MemberState;
}

/**
 * Direct probe; `targetId` lets a process that reused an address ignore a probe for another.
 * It also carries the prober's view of the target (incarnation, suspected or not), so a
 * suspected target refutes on the spot and a target seen at an old incarnation answers with
 * its current one: refutation cannot be starved by unlucky gossip.
 */
export interface PingMessage {
  type: "ping";
  seq: number;
  targetId: string;
  targetIncarnation: number;
  targetSuspect: boolean;
}

/** Asks the receiver to probe `targetAddress` and relay the ack (and a nack if it gets none). */
export interface PingReqMessage {
  type: "ping-req";
  seq: number;
  targetId: string;
  targetAddress: string;
  targetIncarnation: number;
  targetSuspect: boolean;
  wantNack: boolean;
}

export interface AckMessage {
  type: "ack";
  seq: number;
}

/** Lifeguard: a relay says "I asked, no answer yet", proving the requester's own link works. */
export interface NackMessage {
  type: "nack";
  seq: number;
}

export interface AliveMessage {
  type: "alive";
  nodeId: string;
  address: string;
  incarnation: number;
}

export interface SuspectMessage {
  type: "suspect";
  nodeId: string;
  incarnation: number;
  fromId: string;
}

/** `fromId === nodeId` means the node left gracefully. */
export interface DeadMessage {
  type: "dead";
  nodeId: string;
  incarnation: number;
  fromId: string;
}

/**
 * Full state push-pull: a request carries the sender's table (members, then tombstones of
 * reaped ones as dead/left rows) and is answered in kind.
 */
export interface SyncMessage {
  type: "sync";
  isResponse: boolean;
  /**
   * Set on the syncs a joining node sends its seeds. Informational only (packet traces, later
   * metrics): a receiver treats a join exactly like any other sync request.
   */
  isJoin: boolean;
  members: MemberRecord[];
}

export type SwimMessage =
  | PingMessage
  | PingReqMessage
  | AckMessage
  | NackMessage
  | AliveMessage
  | SuspectMessage
  | DeadMessage
  | SyncMessage;

/** Messages that gossip carries (piggybacked on other datagrams). */
export type GossipMessage = AliveMessage | SuspectMessage | DeadMessage;

export const ping = (
  seq: number,
  targetId: string,
  targetIncarnation: number,
  targetSuspect: boolean,
): PingMessage => ({ type: "ping", seq, targetId, targetIncarnation, targetSuspect });
export const ack = (seq: number): AckMessage => ({ type: "ack", seq });
export const nack = (seq: number): NackMessage => ({ type: "nack", seq });
export const alive = (nodeId: string, address: string, incarnation: number): AliveMessage => ({
  type: "alive",
  nodeId,
  address,
  incarnation,
});
export const suspect = (nodeId: string, incarnation: number, fromId: string): SuspectMessage => ({
  type: "suspect",
  nodeId,
  incarnation,
  fromId,
});
export const dead = (nodeId: string, incarnation: number, fromId: string): DeadMessage => ({
  type: "dead",
  nodeId,
  incarnation,
  fromId,
});
