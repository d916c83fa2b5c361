// Self time by function across .cpuprofile files: deno run -A selftime.ts DIR [top]
const dir = Deno.args[0]!;
const top = Number(Deno.args[1] ?? 60);
const self = new Map<string, number>();
let total = 0;
for (const f of Deno.readDirSync(dir)) {
  if (!f.name.endsWith(".cpuprofile")) continue;
  const p = JSON.parse(Deno.readTextFileSync(`${dir}/${f.name}`));
  const byId = new Map<number, { callFrame: { functionName: string; url: string; lineNumber: number } }>();
  for (const n of p.nodes) byId.set(n.id, n);
  const dts: number[] = p.timeDeltas;
  for (let i = 0; i < p.samples.length; i++) {
    const n = byId.get(p.samples[i])!;
    const cf = n.callFrame;
    const url = cf.url.replace(/^.*\/src\//, "src/");
    const key = `${cf.functionName || "(anon)"} ${url}:${cf.lineNumber + 1}`;
    const dt = dts[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  }
}
const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
for (const [k, v] of rows) console.log(`${(100 * v / total).toFixed(2).padStart(6)}%  ${(v / 1000).toFixed(0).padStart(7)} ms  ${k}`);
