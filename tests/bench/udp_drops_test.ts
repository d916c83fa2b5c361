import { equal } from "node:assert/strict";
import { parseDrops } from "../../src/bench/udp_drops.ts";

const TABLE = [
  "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops            ",
  " 1201: 0100007F:1B9D 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 81234 2 0000000000000000 17       ",
  " 1202: 0100007F:1B9E 00000000:0000 07 00000000:00034000 00:00000000 00000000     0        0 81235 2 0000000000000000 0        ",
  "",
].join("\n");

Deno.test("parseDrops reads the drops column of the socket bound to a port", () => {
  equal(parseDrops(TABLE, 0x1b9d), 17);
  equal(parseDrops(TABLE, 0x1b9e), 0);
  equal(parseDrops(TABLE, 7000), undefined, "no socket on that port: unknown, not 0");
  equal(parseDrops("garbage\nnot a table", 7000), undefined);
});
