/**
 * The write-ahead log: segments of CRC32C-framed records, group commit, recovery and
 * checkpoints. See wal.ts for the guarantees.
 */

export {
  type CheckpointResult,
  Wal,
  WalBusyError,
  WalFailedError,
  type WalMetrics,
  type WalOpenOptions,
} from "./wal.ts";
export {
  type RecoveryReport,
  type ReplayedRecord,
  type TruncationReport,
  WalCorruptionError,
} from "./recovery.ts";
export { denoWalFs, denoWalFsWith, type WalFile, type WalFs } from "./wal_fs.ts";
