/** Path helpers for tests (the stand-in for `@std/path`). */

import { fileURLToPath } from "node:url";

export function fromFileUrl(url: URL | string): string {
  return fileURLToPath(url);
}
