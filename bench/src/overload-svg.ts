/**
 * The overload harness's figure: goodput, admitted p99 latency and the adaptive limit over time,
 * one line per protection, the dependency's slow phase shaded. A small SVG writer, no network.
 */

/** One line of a panel: (seconds, value) points. */
export interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: readonly (readonly [number, number])[];
  readonly dashed?: boolean;
}

/** One panel: a title, a y-axis label and its lines (a horizontal reference line optional). */
export interface Panel {
  readonly title: string;
  readonly unit: string;
  readonly series: readonly Series[];
  readonly yMax?: number;
  readonly reference?: { readonly value: number; readonly label: string };
}

const WIDTH = 760;
const PANEL_HEIGHT = 190;
const LEFT = 60;
const RIGHT = 150;
const TOP = 30;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Renders the panels one above the other over [0, duration] seconds, `shade` highlighted. */
export function renderFigure(
  title: string,
  panels: readonly Panel[],
  duration: number,
  shade: { from: number; to: number; label: string },
): string {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const height = TOP + panels.length * (PANEL_HEIGHT + 30) + 20;
  const x = (t: number) => LEFT + (t / duration) * plotWidth;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${LEFT}" y="18" font-size="13" font-weight="bold">${esc(title)}</text>`,
  ];
  panels.forEach((panel, i) => {
    const top = TOP + i * (PANEL_HEIGHT + 30) + 10;
    const plotHeight = PANEL_HEIGHT - 20;
    const max =
      panel.yMax ??
      Math.max(
        1,
        ...panel.series.flatMap((s) => s.points.map((p) => p[1])),
        panel.reference?.value ?? 0,
      ) * 1.1;
    const y = (v: number) => top + plotHeight - (Math.min(v, max) / max) * plotHeight;
    out.push(
      `<rect x="${x(shade.from)}" y="${top}" width="${x(shade.to) - x(shade.from)}" height="${plotHeight}" fill="#eee"/>`,
      `<text x="${x(shade.from) + 3}" y="${top + 11}" fill="#777">${esc(shade.label)}</text>`,
      `<text x="${LEFT}" y="${top - 4}" font-weight="bold">${esc(panel.title)}</text>`,
      `<line x1="${LEFT}" y1="${top + plotHeight}" x2="${LEFT + plotWidth}" y2="${top + plotHeight}" stroke="black"/>`,
      `<line x1="${LEFT}" y1="${top}" x2="${LEFT}" y2="${top + plotHeight}" stroke="black"/>`,
    );
    for (let k = 0; k <= 4; k++) {
      const v = (max * k) / 4;
      out.push(
        `<text x="${LEFT - 4}" y="${y(v) + 3}" text-anchor="end">${Math.round(v)}</text>`,
        `<line x1="${LEFT}" y1="${y(v)}" x2="${LEFT + plotWidth}" y2="${y(v)}" stroke="#ddd"/>`,
      );
    }
    for (let t = 0; t <= duration; t += 2) {
      out.push(`<text x="${x(t)}" y="${top + plotHeight + 12}" text-anchor="middle">${t}s</text>`);
    }
    out.push(
      `<text x="12" y="${top + plotHeight / 2}" transform="rotate(-90 12 ${top + plotHeight / 2})" text-anchor="middle">${esc(panel.unit)}</text>`,
    );
    if (panel.reference) {
      const ry = y(panel.reference.value);
      out.push(
        `<line x1="${LEFT}" y1="${ry}" x2="${LEFT + plotWidth}" y2="${ry}" stroke="black" stroke-dasharray="2 3"/>`,
        `<text x="${LEFT + plotWidth + 4}" y="${ry + 3}">${esc(panel.reference.label)}</text>`,
      );
    }
    panel.series.forEach((s, j) => {
      const d = s.points
        .map(([t, v], n) => `${n === 0 ? 'M' : 'L'}${x(t).toFixed(1)},${y(v).toFixed(1)}`)
        .join('');
      out.push(
        `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
        `<line x1="${LEFT + plotWidth + 6}" y1="${top + 24 + j * 14}" x2="${LEFT + plotWidth + 22}" y2="${top + 24 + j * 14}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
        `<text x="${LEFT + plotWidth + 26}" y="${top + 28 + j * 14}">${esc(s.name)}</text>`,
      );
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
