/**
 * The error-value shape every decoder returns instead of throwing on hostile bytes.
 */

export type Result<T, E = string> = { ok: true; value: T } | { ok: false; reason: E };

export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

export function err<E = string>(reason: E): { ok: false; reason: E } {
  return { ok: false, reason };
}
