import { assert, assertEquals, assertThrows } from "../assert.ts";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import {
  decodeSecret,
  generateSecret,
  signatureHeader,
  SigningSecretError,
  webhookHeaders,
} from "../../src/delivery/signing.ts";

// The example from the Standard Webhooks specification's reference libraries.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

Deno.test("signatureHeader matches the standardwebhooks package's own signer", () => {
  const id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
  const date = new Date(1614265330_000);
  const payload = '{"test": 2432232314}';
  const theirs = new Webhook(SECRET).sign(id, date, payload);
  const ours = signatureHeader([SECRET], id, 1614265330, payload);
  assertEquals(ours, theirs);
});

Deno.test("webhookHeaders verify with the standardwebhooks verifier (our signer, their verifier)", () => {
  fc.assert(
    // Any text body, unicode included; verify() would JSON-parse it unless told not to.
    fc.property(
      fc.string({ unit: "binary" }),
      fc.stringMatching(/^msg_[A-Za-z0-9]{1,20}$/),
      (body, id) => {
        const nowS = Math.floor(Date.now() / 1000);
        const headers = webhookHeaders([SECRET], id, nowS, body);
        new Webhook(SECRET).verify(body, headers, { jsonParse: false }); // throws unless verified
        assertEquals(headers["webhook-id"], id);
        assertEquals(headers["webhook-timestamp"], String(nowS));
      },
    ),
    { numRuns: 50 },
  );
});

Deno.test("webhookHeaders signs once per secret during rotation, each verifying alone", () => {
  const next = generateSecret();
  const nowS = Math.floor(Date.now() / 1000);
  const headers = webhookHeaders([next, SECRET], "msg_rotate", nowS, '{"a":1}');
  const signatures = headers["webhook-signature"]!.split(" ");
  assertEquals(signatures.length, 2);
  for (const s of signatures) assert(s.startsWith("v1,"), s);
  new Webhook(SECRET).verify('{"a":1}', headers);
  new Webhook(next).verify('{"a":1}', headers);
});

Deno.test("webhookHeaders fails verification when the body is altered", () => {
  const nowS = Math.floor(Date.now() / 1000);
  const headers = webhookHeaders([SECRET], "msg_x", nowS, '{"amount":1}');
  assertThrows(() => new Webhook(SECRET).verify('{"amount":9}', headers));
});

Deno.test("webhookHeaders omits the signature when the job has no secret", () => {
  const headers = webhookHeaders([], "msg_x", 1, "{}");
  assertEquals(headers["webhook-signature"], undefined);
});

Deno.test("decodeSecret rejects non-base64 and empty secrets", () => {
  assertThrows(() => decodeSecret("whsec_!!!"), SigningSecretError);
  assertThrows(() => decodeSecret("whsec_"), SigningSecretError);
  assertEquals(decodeSecret("whsec_AQID"), new Uint8Array([1, 2, 3]));
});
