// Pure chart geometry for the dashboard's small live charts: where each line of a time series
// goes in an SVG box, and the round number the vertical axis tops out at. No DOM here, so
// Deno tests import this module as the browser does.

/** The smallest 1, 2 or 5 × 10^k that is >= value; 1 for nothing to show. @param {number} value */
export function niceCeiling(value) {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) {
    // The small tolerance keeps 3 × 0.1 (0.30000000000000004) from rounding up to 0.5.
    if (step * power >= value * (1 - 1e-9)) return step * power;
  }
  return 10 * power;
}

/**
 * SVG path data for each line over the time window that ends at `endMs`: x from the point's
 * time, y from its value against a shared axis top. A null value (no data in that interval)
 * breaks the line instead of drawing it down to zero.
 *
 * @param {{atMs: number}[]} points oldest first
 * @param {(number | null)[][]} lines one value per point, per line
 * @param {{width: number, height: number, windowMs: number, endMs: number}} box
 * @returns {{yMax: number, paths: string[]}}
 */
export function chartPaths(points, lines, box) {
  const startMs = box.endMs - box.windowMs;
  let max = 0;
  for (const values of lines) {
    values.forEach((v, i) => {
      const p = points[i];
      if (v !== null && Number.isFinite(v) && p !== undefined && p.atMs >= startMs) {
        max = Math.max(max, v);
      }
    });
  }
  const yMax = niceCeiling(max);
  const paths = lines.map((values) => {
    let d = "";
    let drawing = false;
    values.forEach((v, i) => {
      const p = points[i];
      if (p === undefined || p.atMs < startMs || v === null || !Number.isFinite(v)) {
        drawing = false;
        return;
      }
      const x = (box.width * (p.atMs - startMs)) / box.windowMs;
      const y = box.height - (box.height * Math.min(Math.max(v, 0), yMax)) / yMax;
      d += `${drawing ? "L" : "M"}${round2(x)} ${round2(y)} `;
      drawing = true;
    });
    return d.trim();
  });
  return { yMax, paths };
}

/** @param {number} n */
function round2(n) {
  return Math.round(n * 100) / 100;
}
