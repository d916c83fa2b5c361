/**
 * The README's first run, as a newcomer does it: `hookd cluster --sink` starts the nodes and a
 * receiver, prints a `hookd submit` command; that command, run by a shell exactly as printed,
 * is accepted, followed to `delivered`, and the receiver verified its signature. SIGTERM then
 * stops everything: exit 0, no process of the run left, its temporary data removed.
 */

import { assert, assertEquals } from "../assert.ts";
import { hookdCommand } from "../../src/process/self_command.ts";
import { readLines } from "../../src/lib/lines.ts";
import { fromFileUrl } from "../paths.ts";
import { pollUntil, processesMentioning } from "./hookd_process.ts";

const PROJECT_ROOT = fromFileUrl(new URL("../../", import.meta.url));

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
      // What a person reads on the terminal: each node's API and the same command.
      assert(stderr.includes(submit), `the printed command is on stderr:\n${stderr}`);
      for (const url of Object.values(ready.api as Record<string, string>)) {
        assert(stderr.includes(url), `${url} is printed`);
      }

      // Run it through a shell, from where the user typed `hookd cluster`.
      const submitting = new Deno.Command("sh", {
        args: ["-c", submit],
        cwd: Deno.env.get("INIT_CWD") ?? PROJECT_ROOT,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // `sh -c` runs the command in the shell's own process, so this reaches hookd itself.
      const shellGuard = setTimeout(() => submitting.kill("SIGKILL"), 60_000);
      const shell = await submitting.output();
      clearTimeout(shellGuard);
      const out = new TextDecoder().decode(shell.stdout).trim().split("\n");
      const err = new TextDecoder().decode(shell.stderr);
      assertEquals(shell.code, 0, `${submit}\n${err}`);
      assert(/^job_[0-9a-z]+$/.test(out[0]!), `the job id first: ${out[0]}`);
      assert(out[1]?.startsWith("delivered after 1 attempt"), out.join("\n"));

      // The receiver took it only after verifying the signature (it answers 401 otherwise).
      const sinkUrl = new URL(String(ready.sink)).origin;
      const stats = await (await fetch(`${sinkUrl}/stats`)).json();
      assertEquals(stats.received, 1);
      assertEquals(stats.unique, 1);
      assertEquals(stats.signature_failures, 0);
      // And the cluster says so on its own output.
      assert(
        await pollUntil(
          () => events.some((e) => e.event === "sink-stats" && e.received === 1),
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
      assertEquals(find("sink-stopped")?.received, 1);
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
