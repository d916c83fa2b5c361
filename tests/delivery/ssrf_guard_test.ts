import { assert, assertEquals } from "../assert.ts";
import { checkTarget, parseIpv6, specialAddressReason } from "../../src/delivery/ssrf_guard.ts";

const noDns = () => Promise.reject(new Error("DNS must not be used"));

Deno.test("specialAddressReason refuses loopback, private, link-local and unspecified IPv4", () => {
  for (
    const address of [
      "127.0.0.1",
      "127.255.0.9",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "0.0.0.0",
      "100.64.0.1",
      "224.0.0.1",
      "255.255.255.255",
      "192.0.2.10",
    ]
  ) {
    assert(specialAddressReason(address) !== undefined, address);
  }
  for (const address of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "93.184.216.34"]) {
    assertEquals(specialAddressReason(address), undefined, address);
  }
});

Deno.test("specialAddressReason refuses special IPv6 including IPv4-mapped forms", () => {
  for (
    const address of [
      "::1",
      "::",
      "fe80::1",
      "fe80::1%eth0",
      "fc00::1",
      "fd12:3456::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:10.0.0.1",
      "::ffff:169.254.169.254",
      "64:ff9b::a00:1",
      "2002:7f00:1::",
      "2001:db8::1",
      "[::1]",
      "::ffff:0:127.0.0.1",
      "::ffff:0:a00:1",
      "64:ff9b:1::a00:1",
      "64:ff9b:1::808:808",
      "3fff::1",
      "3fff:fff::1",
      "2001:2::1",
      "2001:10::1",
      "2001:2f::1",
      "5f00::1",
    ]
  ) {
    assert(specialAddressReason(address) !== undefined, address);
  }
  for (
    const address of [
      "2606:4700:4700::1111",
      "::ffff:8.8.8.8",
      "2a00:1450:4001::200e",
      "64:ff9b::808:808",
      "3fff:1000::1",
      "2001:4860::8888",
    ]
  ) {
    assertEquals(specialAddressReason(address), undefined, address);
  }
  assertEquals(specialAddressReason("not-an-ip"), "not an IP address");
});

Deno.test("parseIpv6 expands :: and embedded IPv4 tails", () => {
  assertEquals(parseIpv6("::1"), [0, 0, 0, 0, 0, 0, 0, 1]);
  assertEquals(parseIpv6("::ffff:1.2.3.4"), [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
  assertEquals(parseIpv6("1:2:3:4:5:6:7:8"), [1, 2, 3, 4, 5, 6, 7, 8]);
  assertEquals(parseIpv6("1::2::3"), undefined);
  assertEquals(parseIpv6("1:2:3:4:5:6:7:8:9"), undefined);
});

Deno.test("checkTarget refuses non-http(s) schemes even when private targets are allowed", async () => {
  for (const url of ["file:///etc/passwd", "ftp://example.com/", "gopher://x", "not a url"]) {
    const verdict = await checkTarget(url, { allowPrivateTargets: true, resolve: noDns });
    assert(!verdict.ok && verdict.reason.permanent, url);
  }
});

Deno.test("checkTarget refuses private literals (URL-normalised forms too) with a clear message", async () => {
  for (
    const url of [
      "http://127.0.0.1:8080/hook",
      "http://[::1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://0x7f.1/",
      "http://2130706433/",
      "http://localhost:3000/",
      "https://api.localhost/",
      "http://169.254.169.254/latest/meta-data",
    ]
  ) {
    const verdict = await checkTarget(url, { allowPrivateTargets: false, resolve: noDns });
    assert(!verdict.ok, url);
    assert(/--allow-private-targets/.test(verdict.reason.message), verdict.reason.message);
  }
});

Deno.test("checkTarget refuses a name resolving to any private address and allows public ones", async () => {
  const resolve = (host: string) =>
    Promise.resolve(host === "evil.example" ? ["93.184.216.34", "10.0.0.5"] : ["93.184.216.34"]);
  const bad = await checkTarget("https://evil.example/h", { allowPrivateTargets: false, resolve });
  assert(!bad.ok && /10\.0\.0\.5/.test(bad.reason.message));
  const good = await checkTarget("https://good.example/h", { allowPrivateTargets: false, resolve });
  assert(good.ok);
});

Deno.test("checkTarget reports a DNS failure as retryable, not as a refusal", async () => {
  const verdict = await checkTarget("https://nx.example/", {
    allowPrivateTargets: false,
    resolve: () => Promise.reject(new Error("NXDOMAIN")),
  });
  assert(!verdict.ok && !verdict.reason.permanent && /NXDOMAIN/.test(verdict.reason.message));
});

Deno.test("checkTarget allows loopback when private targets are allowed, without DNS", async () => {
  const verdict = await checkTarget("http://localhost:1/", {
    allowPrivateTargets: true,
    resolve: noDns,
  });
  assert(verdict.ok);
});
