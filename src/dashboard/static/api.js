// The page's only way to the node: same-origin fetches of the node's own API, with the API
// token (when the node asks for one) sent as a bearer token. The token lives in this tab's
// session storage and in memory; it never goes into a URL, a query string or a cookie.

const TOKEN_KEY = "hookd.apiToken";
/** A node that has not answered in this long is reported as not answering. */
const REQUEST_TIMEOUT_MS = 5000;

/** The node refused the request for want of a (valid) token. */
export class Unauthorized extends Error {
  constructor() {
    super("this node requires an API token");
    this.name = "Unauthorized";
  }
}

/** The node answered with an error status; `code` and `message` are its own. */
export class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

export class NodeApi {
  /** @type {string | undefined} */
  #token;

  constructor() {
    this.#token = readStoredToken();
  }

  get hasToken() {
    return this.#token !== undefined;
  }

  /** @param {string} token */
  setToken(token) {
    this.#token = token;
    try {
      sessionStorage.setItem(TOKEN_KEY, token);
    } catch {
      // Storage may be disabled; the token then lasts as long as the page.
    }
  }

  clearToken() {
    this.#token = undefined;
    try {
      sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // Nothing stored.
    }
  }

  /** @param {string} path */
  get(path) {
    return this.#request("GET", path);
  }

  /** @param {string} path */
  post(path) {
    return this.#request("POST", path);
  }

  /** @param {string} method @param {string} path */
  async #request(method, path) {
    /** @type {Record<string, string>} */
    const headers = { accept: "application/json" };
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    const response = await fetch(path, {
      method,
      headers,
      cache: "no-store",
      credentials: "omit",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (response.status === 401) {
      await response.body?.cancel();
      throw new Unauthorized();
    }
    const body = await response.json().catch(() => undefined);
    if (!response.ok) {
      const error = body?.error ?? {};
      throw new ApiError(
        response.status,
        String(error.code ?? "http_" + response.status),
        String(error.message ?? response.statusText),
      );
    }
    return body;
  }
}

function readStoredToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}
