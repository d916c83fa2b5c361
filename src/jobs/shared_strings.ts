/**
 * The string caches the job store's decoders share (src/lib/string_cache.ts): voter addresses
 * (stamps, message senders, attempts' nodes, sync cursors) and job URLs.
 *
 * Why: a delivered job's metadata stays in the table for `finishedRetentionMs` (1 h), and a
 * fresh copy of each of these strings per record was about a tenth of what it kept
 * (bench/results/session28/). Process-wide, as the strings are: the simulator's five nodes
 * share them, which changes no decoded value. Up to 256 URLs (a query string's token with them)
 * stay referenced after their jobs left the table. Owns the two caches and their bounds only.
 */

import { StringCache } from "../lib/string_cache.ts";

/** A cluster has a handful of voters; 64 bytes holds an IPv6 address with its port. */
export const ADDRESS_STRINGS = new StringCache(64, 64);
/** Receivers' URLs repeat per endpoint; longer URLs than this are decoded afresh. */
export const URL_STRINGS = new StringCache(256, 256);
