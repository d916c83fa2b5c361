/**
 * The short chaos run, as a user runs it: `hookd chaos --duration 60 --seed 1 --json` (five
 * node processes, a sink, the bench's generator, every kind of fault). It must inject faults of
 * every kind, each kind with a measured effect, and lose nothing: no acknowledged job
 * undelivered, no stale attempt after a freeze, every freeze detected and noticed, no node
 * exiting on its own, no commit conflict. The long run is `deno task
 * chaos-long` (docs/reliability.md).
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import type { ChaosReport } from "../../src/chaos/chaos_run.ts";

Deno.test({
  name: "hookd chaos --duration 60 --seed 1 loses no acknowledged job under every kind of fault",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const output = await hookdCommand(["chaos", "--duration", "60", "--seed", "1", "--json"], {
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(output.stdout).trim().split("\n");
    const stderr = new TextDecoder().decode(output.stderr);
    const tail = stderr.split("\n").filter((l) => !l.startsWith("[n")).slice(-40).join("\n");
    let report: ChaosReport;
    try {
      report = JSON.parse(stdout[stdout.length - 1]!) as ChaosReport;
    } catch {
      throw new Error(`no JSON report (exit ${output.code}); stderr tail:\n${tail}`);
    }
    const summary = JSON.stringify(report);
    assertEquals(report.lost, 0, `lost jobs: ${summary}\n${tail}`);
    assertEquals(report.problems, [], `${summary}\n${tail}`);
    assertEquals(output.code, 0, summary);
    // Every kind of fault begun, and every kind measurably did something: a process killed or
    // stopped (and detected), datagrams dropped, receiver requests refused, held or reset.
    for (const [kind, count] of Object.entries(report.faults)) {
      assert(count > 0, `no ${kind} fault was injected: ${summary}`);
      const effective = report.faults_effective[kind as keyof typeof report.faults_effective];
      assert(effective > 0, `no ${kind} fault had an effect: ${summary}`);
    }
    assert(report.acked > 1_000, `only ${report.acked} jobs acknowledged: ${summary}`);
    assertEquals(report.delivered + report.dead_lettered, report.acked, summary);
    // Nor any committed job, acknowledged or not, still waiting for delivery.
    assertEquals(report.still_scheduled, 0, summary);
    assertEquals(report.stale_attempts, 0, summary);
    assertEquals(report.commit_conflicts, 0, summary);
    assertEquals(report.unexpected_exits, 0, summary);
    // Every SIGSTOP was detected by the others and noticed by the frozen node (counted apart
    // from freezes a starved host may log besides, which only cost a catch-up).
    assertEquals([report.stops_undetected, report.stops_unnoticed], [0, 0], summary);
  },
});
