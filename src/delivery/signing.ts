/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): `webhook-id`,
 * `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
 * one space-separated signature per secret during rotation.
 *
 * Owns secret parsing and HMAC computation (WebCrypto) with a bounded cache of imported keys.
 * Must not read clocks: the caller passes the timestamp.
 */

const SECRET_PREFIX = "whsec_";
/** Imported keys kept; past this the cache is dropped whole (cheap, and bounded). */
const KEY_CACHE_MAX = 4096;

const encoder = new TextEncoder();
const keyCache = new Map<string, Promise<CryptoKey>>();

export class SigningSecretError extends Error {
  override name = "SigningSecretError";
}

/** The raw key bytes of a `whsec_<base64>` secret (a bare base64 string is accepted too). */
export function decodeSecret(secret: string): Uint8Array {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  let binary: string;
  try {
    binary = atob(b64);
  } catch (cause) {
    throw new SigningSecretError("signing secret is not whsec_<base64>", { cause });
  }
  if (binary.length === 0) throw new SigningSecretError("signing secret is empty");
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** A new random `whsec_` secret of 24 bytes (what the Standard Webhooks libraries generate). */
export function generateSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return SECRET_PREFIX + toBase64(bytes);
}

function importKey(secret: string): Promise<CryptoKey> {
  let key = keyCache.get(secret);
  if (key === undefined) {
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    key = crypto.subtle.importKey(
      "raw",
      decodeSecret(secret) as Uint8Array<ArrayBuffer>,
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    // A rejected import must not stay cached.
    key.catch(() => keyCache.delete(secret));
    keyCache.set(secret, key);
  }
  return key;
}

/** The `webhook-signature` header value: `v1,<sig>` per secret, space-separated. */
export async function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string | Uint8Array,
): Promise<string> {
  const bodyText = typeof body === "string" ? body : new TextDecoder().decode(body);
  const content = encoder.encode(`${id}.${timestampSeconds}.${bodyText}`);
  const parts = await Promise.all(secrets.map(async (secret) => {
    const mac = await crypto.subtle.sign("HMAC", await importKey(secret), content);
    return `v1,${toBase64(new Uint8Array(mac))}`;
  }));
  return parts.join(" ");
}

/** The three Standard Webhooks headers for one attempt. */
export async function webhookHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Promise<Record<string, string>> {
  const headers: Record<string, string> = {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
  };
  if (secrets.length > 0) {
    headers["webhook-signature"] = await signatureHeader(secrets, id, timestampSeconds, body);
  }
  return headers;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary);
}
