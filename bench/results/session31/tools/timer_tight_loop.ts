// setTimeout and clearTimeout of a 10-s timer in a tight loop: µs per call.
const n = 100_000;
let t = performance.now();
for (let i = 0; i < n; i++) clearTimeout(setTimeout(() => {}, 10_000));
console.log("arm+clear µs each", ((performance.now() - t) * 1000 / n).toFixed(2));
t = performance.now();
const handles: ReturnType<typeof setTimeout>[] = [];
for (let i = 0; i < n; i++) handles.push(setTimeout(() => {}, 10_000));
const mid = performance.now();
for (const h of handles) clearTimeout(h);
const armUs = (mid - t) * 1000 / n;
const clearUs = (performance.now() - mid) * 1000 / n;
console.log("arm µs", armUs.toFixed(2), "clear µs", clearUs.toFixed(2));
