/**
 * SVG line charts for the sweep reports, written by hand (no chart library: a few axes,
 * polylines and labels). A point with no value (a step where nothing completed) is a gap in
 * its line, marked "n/a" at the axis: it is not a latency and is never drawn as one.
 *
 * Owns the chart geometry and the SVG text only; which figures go in which chart is
 * sweep_report.ts.
 */

export interface Series {
  readonly name: string;
  /** One value per x; null: no measurement there. */
  readonly values: ReadonlyArray<number | null>;
  /** Stroke colour. */
  readonly color: string;
  /** Dashed line (a second family of series, e.g. the unbatched WAL). */
  readonly dashed?: boolean;
}

export interface ChartOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  /** The x values, ascending; every series has one value per x. */
  readonly xs: readonly number[];
  /** How x values are written on the axis. */
  readonly xFormat?: (x: number) => string;
  /** Space x logarithmically (offered rates double from step to step). */
  readonly xLog?: boolean;
  /** Space y logarithmically (latencies span orders of magnitude). */
  readonly yLog?: boolean;
  readonly series: readonly Series[];
  /** Horizontal reference lines (a target), dashed grey. */
  readonly references?: ReadonlyArray<{ readonly y: number; readonly label: string }>;
}

const WIDTH = 840;
const HEIGHT = 440;
const MARGIN = { left: 72, right: 270, top: 48, bottom: 58 };

export const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function niceStep(span: number): number {
  const raw = span / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

function fmt(y: number): string {
  if (y === 0) return "0";
  if (Math.abs(y) >= 1000) return `${Math.round(y / 100) / 10}k`.replace(".0k", "k");
  if (Math.abs(y) >= 10) return String(Math.round(y));
  return String(Math.round(y * 100) / 100);
}

/** The chart as an SVG document. */
export function lineChart(options: ChartOptions): string {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const xs = options.xs;
  const values = options.series.flatMap((s) => s.values).filter((v): v is number => v !== null);
  for (const r of options.references ?? []) values.push(r.y);

  // x scale
  const xMin = xs[0] ?? 0;
  const xMax = xs[xs.length - 1] ?? 1;
  const xLog = options.xLog === true && xMin > 0;
  const xPos = (x: number): number => {
    if (xMax === xMin) return MARGIN.left + plotW / 2;
    const t = xLog
      ? (Math.log(x) - Math.log(xMin)) / (Math.log(xMax) - Math.log(xMin))
      : (x - xMin) / (xMax - xMin);
    return MARGIN.left + t * plotW;
  };

  // y scale
  const yLog = options.yLog === true;
  let yTicks: number[];
  let yPos: (y: number) => number;
  if (yLog) {
    const positive = values.filter((v) => v > 0);
    const lo = 10 ** Math.floor(Math.log10(Math.min(...positive, 1)));
    const hi = 10 ** Math.ceil(Math.log10(Math.max(...positive, lo * 10)));
    yTicks = [];
    for (let t = lo; t <= hi * 1.0001; t *= 10) yTicks.push(t);
    yPos = (y) => {
      const v = Math.max(y, lo);
      return MARGIN.top + plotH - ((Math.log10(v) - Math.log10(lo)) /
            (Math.log10(hi) - Math.log10(lo))) * plotH;
    };
  } else {
    const top = Math.max(...values, 1);
    const step = niceStep(top);
    const hi = Math.ceil(top / step) * step;
    yTicks = [];
    for (let t = 0; t <= hi * 1.0001; t += step) yTicks.push(t);
    yPos = (y) => MARGIN.top + plotH - (y / hi) * plotH;
  }

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" ` +
      `viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="24" font-size="15" font-weight="bold">${
      escape(options.title)
    }</text>`,
  );
  // Grid and y ticks.
  for (const t of yTicks) {
    const y = yPos(t).toFixed(1);
    out.push(
      `<line x1="${MARGIN.left}" y1="${y}" x2="${
        MARGIN.left + plotW
      }" y2="${y}" stroke="#e5e5e5"/>`,
      `<text x="${MARGIN.left - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${
        fmt(t)
      }</text>`,
    );
  }
  // x ticks at the data.
  const xFormat = options.xFormat ?? ((x: number) => fmt(x));
  for (const x of xs) {
    const px = xPos(x).toFixed(1);
    out.push(
      `<line x1="${px}" y1="${MARGIN.top + plotH}" x2="${px}" y2="${
        MARGIN.top + plotH + 5
      }" stroke="#333"/>`,
      `<text x="${px}" y="${MARGIN.top + plotH + 19}" text-anchor="middle">${
        escape(xFormat(x))
      }</text>`,
    );
  }
  // Axes and labels.
  out.push(
    `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${
      MARGIN.top + plotH
    }" stroke="#333"/>`,
    `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${
      MARGIN.top + plotH
    }" stroke="#333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 14}" text-anchor="middle">${
      escape(options.xLabel)
    }</text>`,
    `<text transform="translate(18 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${
      escape(options.yLabel)
    }${yLog ? " (log scale)" : ""}</text>`,
  );
  for (const r of options.references ?? []) {
    const y = yPos(r.y).toFixed(1);
    out.push(
      `<line x1="${MARGIN.left}" y1="${y}" x2="${
        MARGIN.left + plotW
      }" y2="${y}" stroke="#888" stroke-dasharray="2 4"/>`,
      `<text x="${MARGIN.left + plotW - 4}" y="${Number(y) - 4}" text-anchor="end" fill="#666">${
        escape(r.label)
      }</text>`,
    );
  }
  // Series: polylines broken at gaps, a dot per point, "n/a" where a value is missing.
  const naAt = new Set<number>();
  for (const s of options.series) {
    let run: string[] = [];
    const flush = () => {
      if (run.length > 1) {
        out.push(
          `<polyline fill="none" stroke="${s.color}" stroke-width="2"${
            s.dashed === true ? ' stroke-dasharray="6 4"' : ""
          } points="${run.join(" ")}"/>`,
        );
      }
      run = [];
    };
    s.values.forEach((v, i) => {
      const x = xs[i]!;
      if (v === null) {
        flush();
        naAt.add(x);
        return;
      }
      const point = `${xPos(x).toFixed(1)},${yPos(v).toFixed(1)}`;
      run.push(point);
      out.push(
        `<circle cx="${xPos(x).toFixed(1)}" cy="${yPos(v).toFixed(1)}" r="3" fill="${s.color}"/>`,
      );
    });
    flush();
  }
  for (const x of naAt) {
    out.push(
      `<text x="${xPos(x).toFixed(1)}" y="${
        MARGIN.top + plotH - 6
      }" text-anchor="middle" fill="#999">n/a</text>`,
    );
  }
  // Legend.
  options.series.forEach((s, i) => {
    const y = MARGIN.top + 8 + i * 20;
    const x = MARGIN.left + plotW + 16;
    out.push(
      `<line x1="${x}" y1="${y}" x2="${x + 24}" y2="${y}" stroke="${s.color}" stroke-width="2"${
        s.dashed === true ? ' stroke-dasharray="6 4"' : ""
      }/>`,
      `<text x="${x + 30}" y="${y}" dominant-baseline="middle">${escape(s.name)}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}
