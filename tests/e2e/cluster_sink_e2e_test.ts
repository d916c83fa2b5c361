/**
 * The README's first run, as a newcomer does it: `hookd cluster --sink` starts the nodes and a
 * receiver, prints a `hookd submit` command; that command, run by a shell exactly as printed,
 * is accepted, followed to `delivered`, and the receiver verified its signature. So are the
 * printed `hookd endpoint add` and `hookd send`: the event reaches the sink, verified. SIGTERM then
 * stops everything: exit 0, no process of the run left, its temporary data removed.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { readLines } from "../../src/lib/lines.ts";
import { fromFileUrl } from "../paths.ts";
import { pollUntil, processesMentioning } from "./hookd_process.ts";

const PROJECT_ROOT = fromFileUrl(new URL("../../", import.meta.url));

/**
 * Runs a printed command through a shell, from where the user typed `hookd cluster`; asserts
 * it exits 0 and returns its stdout lines.
 */
async function runPrinted(command: string): Promise<string[]> {
  const running = new Deno.Command("sh", {
    args: ["-c", command],
    cwd: Deno.env.get("INIT_CWD") ?? PROJECT_ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // `sh -c` runs the command in the shell's own process, so this reaches hookd itself.
  const guard = setTimeout(() => running.kill("SIGKILL"), 60_000);
  const shell = await running.output();
  clearTimeout(guard);
  const err = new TextDecoder().decode(shell.stderr);
  assertEquals(shell.code, 0, `${command}\n${err}`);
  return new TextDecoder().decode(shell.stdout).trim().split("\n");
}

interface EventLine {
  event: string;
  [field: string]: unknown;
}

Deno.test({
  name:
    "hookd cluster --sink: the printed submit command is delivered and verified; stop cleans up",
  sanitizeResources: true,
  sanitizeOps: true,
  async fn() {
    const child = hookdCommand(["cluster", "--nodes", "3", "--sink", "--quiet"]).spawn();
    const events: EventLine[] = [];
    let stderr = "";
    const reading = (async () => {
      for await (const line of readLines(child.stdout, { unterminatedLine: "drop" })) {
        events.push(JSON.parse(line));
      }
    })();
    const readingErr = (async () => {
      for await (const line of readLines(child.stderr, { unterminatedLine: "yield" })) {
        stderr += line + "\n";
      }
    })();
    const signal = (name: Deno.Signal) => {
      try {
        child.kill(name);
      } catch {
        // Already exited.
      }
    };
    const guard = setTimeout(() => signal("SIGKILL"), 90_000);
    const find = (name: string) => events.find((e) => e.event === name);
    let secret = "";
    let dataDir = "";
    try {
      assert(
        await pollUntil(() => find("cluster-ready") !== undefined, 60_000),
        `the cluster never became ready:\n${stderr}`,
      );
      const ready = find("cluster-ready")!;
      const submit = String(ready.submit_command);
      dataDir = String(ready.data);
      assertEquals(ready.data_kept, false);
      secret = /--secret (whsec_[A-Za-z0-9+/=]+)/.exec(submit)?.[1] ?? "";
      assert(secret !== "", `the printed command signs with the sink's secret: ${submit}`);
      // What a person reads on the terminal: each node's API and the same command. stderr is a
      // pipe of its own, read apart from stdout's events: its text may arrive after the event.
      const apis = Object.values(ready.api as Record<string, string>);
      await pollUntil(
        () => stderr.includes(submit) && apis.every((url) => stderr.includes(url)),
        10_000,
      );
      assert(stderr.includes(submit), `the printed command is on stderr:\n${stderr}`);
      for (const url of apis) assert(stderr.includes(url), `${url} is printed`);

      const out = await runPrinted(submit);
      assert(/^job_[0-9a-z]+$/.test(out[0]!), `the job id first: ${out[0]}`);
      assert(out[1]?.startsWith("delivered after 1 attempt"), out.join("\n"));

      // The receiver took it only after verifying the signature (it answers 401 otherwise).
      const sinkUrl = new URL(String(ready.sink)).origin;
      const stats = await (await fetch(`${sinkUrl}/stats`)).json();
      assertEquals(stats.received, 1);
      assertEquals(stats.unique, 1);
      assertEquals(stats.signature_failures, 0);

      // The printed endpoint and event: the event reaches the sink through the endpoint,
      // signed under the sink's secret, with the event's id as its webhook-id.
      const endpointAdd = String(ready.endpoint_add_command);
      const send = String(ready.send_command);
      assert(
        await pollUntil(() => stderr.includes(endpointAdd) && stderr.includes(send), 10_000),
        stderr,
      );
      const added = await runPrinted(endpointAdd);
      assert(/^id: +ep_[0-9a-f]{24}$/.test(added[0]!), `the endpoint first: ${added.join("\n")}`);
      const sent = await runPrinted(send);
      assert(/^evt_k?[0-9a-f]{32}$/.test(sent[0]!), `the event id first: ${sent[0]}`);
      assert(
        /^evt_k?[0-9a-f]{32}\.ep_[0-9a-f]{24}: delivered/.test(sent[1] ?? ""),
        sent.join("\n"),
      );
      const after = await (await fetch(`${sinkUrl}/stats`)).json();
      assertEquals([after.received, after.unique, after.signature_failures], [2, 2, 0]);
      // And the cluster says so on its own output.
      assert(
        await pollUntil(
          () => events.some((e) => e.event === "sink-stats" && e.received === 2),
          5_000,
        ),
        "the cluster reported the sink's receipt",
      );
      assert(await pollUntil(() => stderr.includes("signature verified"), 5_000), stderr);

      child.kill("SIGTERM");
      const status = await child.status;
      await reading;
      await readingErr;
      assertEquals(status.code, 0, stderr);
      assertEquals(events.at(-1)?.event, "cluster-stopped");
      assertEquals(find("sink-stopped")?.received, 2);
      // Nothing of the run is left: the nodes (their --data is under the run's directory),
      // the sink (its --secret is the run's), and the temporary directory.
      assertEquals(await processesMentioning(dataDir), [], "no node process left");
      assertEquals(await processesMentioning(secret), [], "no sink process left");
      let exists = true;
      try {
        await Deno.stat(dataDir);
      } catch {
        exists = false;
      }
      assert(!exists, `${dataDir} was removed`);
    } finally {
      clearTimeout(guard);
      // A failed assertion leaves the cluster running: SIGTERM lets it stop its children
      // (SIGKILL would orphan them); SIGKILL only if it does not exit in time.
      const killer = setTimeout(() => signal("SIGKILL"), 20_000);
      signal("SIGTERM");
      await child.status;
      clearTimeout(killer);
      await reading.catch(() => {});
      await readingErr.catch(() => {});
    }
  },
});
