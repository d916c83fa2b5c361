// Scratch: counts fresh typed-array backing stores per process (session 43), not for landing.
if (Deno.env.get("HOOKD_COUNT_AB")) {
  const counts: Record<string, number> = {};
  let total = 0;
  const sites = new Map<string, number>();
  const note = (kind: string) => {
    total++;
    counts[kind] = (counts[kind] ?? 0) + 1;
    if ((total & 31) === 0) {
      const lines = (new Error().stack ?? "").split("\n").slice(3, 5).map((l) => l.trim().replace(/^at /, "").replace(/file:\/\/\/tmp\/s43count\/src\//, "")).join(" < ");
      const key = `${kind} ${lines}`;
      sites.set(key, (sites.get(key) ?? 0) + 32);
    }
  };
  const U8 = Uint8Array;
  globalThis.Uint8Array = new Proxy(U8, {
    construct(target, args, newTarget) {
      const a0 = args[0];
      if (!(a0 instanceof ArrayBuffer) && !(a0 instanceof SharedArrayBuffer)) note("new Uint8Array");
      return Reflect.construct(target, args, newTarget);
    },
  });
  const slice = U8.prototype.slice;
  U8.prototype.slice = function (this: Uint8Array, ...a: [number?, number?]) {
    note("slice");
    return slice.apply(this, a);
  } as typeof slice;
  const enc = TextEncoder.prototype.encode;
  TextEncoder.prototype.encode = function (this: TextEncoder, s?: string) {
    note("TextEncoder.encode");
    return enc.call(this, s);
  };
  const AB = ArrayBuffer;
  globalThis.ArrayBuffer = new Proxy(AB, {
    construct(target, args, newTarget) {
      note("new ArrayBuffer");
      return Reflect.construct(target, args, newTarget);
    },
  });
  const dump = () => {
    const top = [...sites.entries()].sort((a, b) => b[1] - a[1]).slice(0, 60);
    Deno.writeTextFileSync(`/tmp/s43/counts-${Deno.pid}.json`, JSON.stringify({ total, counts, top }, null, 1));
  };
  Deno.unrefTimer(setInterval(dump, 1000));
}
