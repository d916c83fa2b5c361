// What a timer fire costs a sleeping Deno process on this machine (issue 19, session 23):
// `perf stat -e task-clock,context-switches -- deno run -A timer_chain_cost.ts MS [cancel]`.
// Chains setTimeout(MS) for 10 s after a 2-s warm-up (MS 0: one 10-s sleep, the baseline). With
// `cancel`, each step also arms a 250-ms timer and cancels the previous one (what the freeze
// monitor did at every beat before session 23). perf's task-clock is the scheduler's exact
// run time of every thread, not /proc's tick-sampled utime/stime.
const ms = Number(Deno.args[0] ?? 100);
const cancel = Deno.args[1] === "cancel";
await new Promise((r) => setTimeout(r, 2000));
const t0 = performance.now();
if (ms === 0) await new Promise((r) => setTimeout(r, 10_000));
else {
  const steps = Math.round(10_000 / ms);
  let n = 0;
  let other: ReturnType<typeof setTimeout> | undefined;
  await new Promise<void>((done) => {
    const step = () => {
      if (cancel) {
        if (other !== undefined) clearTimeout(other);
        other = setTimeout(() => {}, 250);
      }
      if (++n < steps) setTimeout(step, ms);
      else {
        if (other !== undefined) clearTimeout(other);
        done();
      }
    };
    setTimeout(step, ms);
  });
}
console.log(`chain of ${ms}-ms timers${cancel ? " (and a 250-ms one cancelled at each)" : ""}: ${ms === 0 ? 1 : Math.round(10_000 / ms)} fires in ${(performance.now() - t0).toFixed(0)} ms`);
