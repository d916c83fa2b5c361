/**
 * A small Chrome DevTools Protocol client on Deno's own WebSocket, enough for the dashboard's
 * browser test: start headless Chromium, open a page, read it, click and type the way a person
 * does (input events at an element's place on screen, not `element.click()`), change the
 * viewport and take screenshots. No npm package: puppeteer-core and playwright-core would pin
 * a protocol client of their own to a Chromium we do not choose (Debian's).
 *
 * Owns the Chromium process it starts and its socket; `close()` ends both (SIGKILL when the
 * browser does not leave within its grace). Every wait is bounded.
 */

import { readLines } from "../../src/lib/lines.ts";

/** Where Debian puts Chromium; HOOKD_CHROMIUM overrides. */
const CANDIDATES = [
  "/usr/bin/chromium-headless-shell",
  "/usr/lib/chromium/chromium-headless-shell",
  "/usr/bin/chromium",
  "/usr/lib/chromium/chromium",
];

/** The flags that work on these machines (no sandbox as root, no GPU, no network chatter). */
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-quic",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-extensions",
  "--disable-default-apps",
  "--mute-audio",
  "--hide-scrollbars",
  "--remote-debugging-address=127.0.0.1",
  "--remote-debugging-port=0",
];

const COMMAND_TIMEOUT_MS = 15_000;
const LAUNCH_TIMEOUT_MS = 20_000;
const CLOSE_GRACE_MS = 3_000;

export function findChromium(): string | undefined {
  const fromEnv = Deno.env.get("HOOKD_CHROMIUM");
  if (fromEnv !== undefined && fromEnv !== "") return fromEnv;
  for (const path of CANDIDATES) {
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

type Json = Record<string, unknown>;
type EventHandler = (params: Json, sessionId: string | undefined) => void;

interface Pending {
  resolve: (result: Json) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class Browser {
  readonly #child: Deno.ChildProcess;
  readonly #socket: WebSocket;
  readonly #pending = new Map<number, Pending>();
  readonly #handlers = new Map<string, EventHandler[]>();
  readonly #stderrTail: string[];
  readonly #stderrDone: Promise<void>;
  #nextId = 1;
  #closed = false;

  private constructor(
    child: Deno.ChildProcess,
    socket: WebSocket,
    stderrTail: string[],
    stderrDone: Promise<void>,
  ) {
    this.#child = child;
    this.#socket = socket;
    this.#stderrTail = stderrTail;
    this.#stderrDone = stderrDone;
    socket.onmessage = (event) => this.#onMessage(String(event.data));
    socket.onclose = () => {
      for (const [id, p] of this.#pending) {
        clearTimeout(p.timer);
        p.reject(new Error("the browser closed its DevTools socket"));
        this.#pending.delete(id);
      }
    };
  }

  /** Starts Chromium with a fresh profile in `userDataDir` and connects to it. */
  static async launch(
    executable: string,
    options: { userDataDir: string; width: number; height: number },
  ): Promise<Browser> {
    const child = new Deno.Command(executable, {
      args: [
        ...FLAGS,
        `--user-data-dir=${options.userDataDir}`,
        `--window-size=${options.width},${options.height}`,
        "about:blank",
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const tail: string[] = [];
    const found = Promise.withResolvers<string>();
    const stderrDone = (async () => {
      for await (const line of readLines(child.stderr)) {
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(line);
        if (match !== null) found.resolve(match[1]!);
        tail.push(line);
        if (tail.length > 40) tail.shift();
      }
      found.reject(new Error(`Chromium exited before listening:\n${tail.join("\n")}`));
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Chromium did not listen within ${LAUNCH_TIMEOUT_MS} ms`)),
        LAUNCH_TIMEOUT_MS,
      );
    });
    let url: string;
    try {
      url = await Promise.race([found.promise, timeout]);
    } catch (error) {
      clearTimeout(timer);
      killQuietly(child);
      await child.status;
      await stderrDone.catch(() => {});
      throw error;
    }
    clearTimeout(timer);
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.onopen = () => resolve();
      socket.onerror = () => reject(new Error(`cannot connect to ${url}`));
    });
    return new Browser(child, socket, tail, stderrDone);
  }

  /** The last lines Chromium wrote on stderr, for a failing test's message. */
  get stderrTail(): string {
    return this.#stderrTail.join("\n");
  }

  send(method: string, params: Json = {}, sessionId?: string): Promise<Json> {
    if (this.#closed) return Promise.reject(new Error(`${method}: the browser is closed`));
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<Json>();
    const timer = setTimeout(() => {
      this.#pending.delete(id);
      reject(new Error(`${method} had no answer within ${COMMAND_TIMEOUT_MS} ms`));
    }, COMMAND_TIMEOUT_MS);
    this.#pending.set(id, { resolve, reject, timer });
    this.#socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    return promise;
  }

  on(event: string, handler: EventHandler): void {
    const list = this.#handlers.get(event) ?? [];
    list.push(handler);
    this.#handlers.set(event, list);
  }

  async newPage(): Promise<Page> {
    const { targetId } = await this.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await this.send("Target.attachToTarget", { targetId, flatten: true });
    const page = new Page(this, String(sessionId));
    await page.send("Page.enable");
    await page.send("Runtime.enable");
    await page.send("Network.enable");
    return page;
  }

  /** Asks the browser to leave, then kills it if it has not within a grace period. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.send("Browser.close").catch(() => {});
    this.#closed = true;
    const timer = setTimeout(() => killQuietly(this.#child), CLOSE_GRACE_MS);
    await this.#child.status;
    clearTimeout(timer);
    try {
      this.#socket.close();
    } catch {
      // Already closed by the browser.
    }
    for (const p of this.#pending.values()) clearTimeout(p.timer);
    this.#pending.clear();
    await this.#stderrDone.catch(() => {});
    if (this.#socket.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        this.#socket.addEventListener("close", () => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  #onMessage(text: string): void {
    const message = JSON.parse(text) as {
      id?: number;
      result?: Json;
      error?: { message: string };
      method?: string;
      params?: Json;
      sessionId?: string;
    };
    if (message.id !== undefined) {
      const pending = this.#pending.get(message.id);
      if (pending === undefined) return;
      this.#pending.delete(message.id);
      clearTimeout(pending.timer);
      if (message.error !== undefined) pending.reject(new Error(message.error.message));
      else pending.resolve(message.result ?? {});
      return;
    }
    if (message.method !== undefined) {
      for (const handler of this.#handlers.get(message.method) ?? []) {
        handler(message.params ?? {}, message.sessionId);
      }
    }
  }
}

export class Page {
  readonly #browser: Browser;
  readonly sessionId: string;
  /** Every URL the page requested, in order. */
  readonly requests: string[] = [];
  /** Uncaught exceptions in the page. */
  readonly exceptions: string[] = [];

  constructor(browser: Browser, sessionId: string) {
    this.#browser = browser;
    this.sessionId = sessionId;
    browser.on("Network.requestWillBeSent", (params, session) => {
      if (session !== sessionId) return;
      const request = params.request as { url: string; headers: Record<string, string> };
      this.requests.push(request.url);
    });
    browser.on("Runtime.exceptionThrown", (params, session) => {
      if (session !== sessionId) return;
      const details = params.exceptionDetails as {
        text: string;
        exception?: { description?: string };
      };
      this.exceptions.push(details.exception?.description ?? details.text);
    });
  }

  send(method: string, params: Json = {}): Promise<Json> {
    return this.#browser.send(method, params, this.sessionId);
  }

  async goto(url: string): Promise<void> {
    await this.send("Page.navigate", { url });
    await this.waitFor(`document.readyState === "complete"`, { what: `${url} loaded` });
  }

  /** The value of a JavaScript expression in the page (awaited when it is a promise). */
  async evaluate<T>(expression: string): Promise<T> {
    const answer = await this.send("Runtime.evaluate", {
      expression,
      returnByValue: true,
      awaitPromise: true,
    });
    const details = answer.exceptionDetails as
      | { text: string; exception?: { description?: string } }
      | undefined;
    if (details !== undefined) {
      throw new Error(`${expression}: ${details.exception?.description ?? details.text}`);
    }
    return (answer.result as { value: T }).value;
  }

  /**
   * Polls `expression` until it is truthy and returns its value; throws naming `what` and the
   * last value seen when it is not within `timeoutMs`.
   */
  async waitFor<T>(
    expression: string,
    options: { what: string; timeoutMs?: number; pollMs?: number },
  ): Promise<T> {
    const deadline = performance.now() + (options.timeoutMs ?? 15_000);
    let last: unknown;
    let lastError: unknown;
    for (let polls = 0; polls < 10_000; polls++) {
      try {
        last = await this.evaluate<T>(expression);
        if (last) return last as T;
      } catch (error) {
        lastError = error;
      }
      if (performance.now() > deadline) break;
      await new Promise((r) => setTimeout(r, options.pollMs ?? 100));
    }
    throw new Error(
      `timed out waiting for ${options.what}; last value ${JSON.stringify(last)}` +
        (lastError !== undefined ? `, last error ${lastError}` : ""),
    );
  }

  /** Scrolls `selector` into view and clicks its middle with the mouse. */
  async click(selector: string): Promise<void> {
    const box = await this.evaluate<
      { x: number; y: number; width: number; height: number; disabled: boolean } | null
    >(`(() => {
      const el = document.querySelector(${JSON.stringify(selector)});
      if (el === null) return null;
      el.scrollIntoView({ block: "center", inline: "center" });
      const r = el.getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: r.height, disabled: !!el.disabled };
    })()`);
    if (box === null) throw new Error(`click: nothing matches ${selector}`);
    if (box.width === 0 || box.height === 0) throw new Error(`click: ${selector} is not visible`);
    if (box.disabled) throw new Error(`click: ${selector} is disabled`);
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 2;
    // What is under the pointer there gets the click, as for a person: a covered element fails.
    const hit = await this.evaluate<boolean>(`(() => {
      const el = document.querySelector(${JSON.stringify(selector)});
      const top = document.elementFromPoint(${x}, ${y});
      return el !== null && top !== null && (el === top || el.contains(top));
    })()`);
    if (!hit) throw new Error(`click: ${selector} is covered at (${x}, ${y})`);
    await this.send("Input.dispatchMouseEvent", { type: "mouseMoved", x, y });
    for (const type of ["mousePressed", "mouseReleased"]) {
      await this.send("Input.dispatchMouseEvent", { type, x, y, button: "left", clickCount: 1 });
    }
  }

  /**
   * Clicks `selector` (to focus it), selects what it holds, as a person does before typing
   * over it, and types `text` as keyboard input.
   */
  async type(selector: string, text: string): Promise<void> {
    await this.click(selector);
    await this.evaluate(`document.querySelector(${JSON.stringify(selector)}).select()`);
    await this.send("Input.insertText", { text });
  }

  async setViewport(width: number, height: number, mobile = false): Promise<void> {
    await this.send("Emulation.setDeviceMetricsOverride", {
      width,
      height,
      deviceScaleFactor: 1,
      mobile,
    });
  }

  /** A PNG of the whole page (beyond the viewport), or of `height` px of it from `y`. */
  async screenshot(slice?: { y: number; height: number }): Promise<Uint8Array> {
    const metrics = await this.send("Page.getLayoutMetrics");
    const size = metrics.cssContentSize as { width: number; height: number };
    const y = slice?.y ?? 0;
    const height = Math.min(slice?.height ?? size.height, size.height - y);
    const { data } = await this.send("Page.captureScreenshot", {
      format: "png",
      captureBeyondViewport: true,
      clip: { x: 0, y, width: size.width, height, scale: 1 },
    });
    return Uint8Array.from(atob(String(data)), (c) => c.charCodeAt(0));
  }
}

function killQuietly(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // Already gone.
  }
}
