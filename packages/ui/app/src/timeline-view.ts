// The timeline: a lane of pipelined regions (each region's span, from its tasks' first start to last end), then
// one lane per executor with its task attempts packed into rows (an executor runs several at once), coloured by
// state, and a red line at each failover. Up to CANVAS_THRESHOLD attempts it is SVG (one data-attempt rect each,
// a <title> tooltip); above, one canvas (thousands of SVG nodes are slow to lay out) with a hit-tested tooltip.
import type { UiAttempt, UiFailover, UiRegion, UiTaskState } from '../../src/api/ui-api.js';
import { h, s } from './dom.js';
import { failedWhat } from './failed-what.js';
import { formatDuration } from './format.js';
import { packIntervals } from './timeline-layout.js';
import { REGION_COLOURS, STATE_COLOURS } from './styles.js';

export const CANVAS_THRESHOLD = 1500;
const LABEL_WIDTH = 150;
const ROW_HEIGHT = 9;
const ROW_GAP = 2;
const LANE_GAP = 10;
const AXIS_HEIGHT = 22;
const MAX_ROWS_PER_LANE = 48;
const MAX_REGION_ROWS = 12;
const LOCAL_LANE = 'local';

export interface TimelineInput {
  readonly attempts: readonly UiAttempt[];
  readonly regions: readonly UiRegion[];
  readonly failovers: readonly UiFailover[];
  /** Where running attempts end for now (ms since the job's first event). */
  readonly nowMs: number;
  readonly widthPx: number;
}

interface Item {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly colour: string;
  readonly title: string;
  readonly attempt: UiAttempt | undefined;
  readonly region: string | undefined;
}

interface Lane {
  readonly label: string;
  /** A second, smaller line under the label (intervals stacked past the row limit). */
  readonly note: string | undefined;
  readonly y: number;
  readonly height: number;
}

interface Span {
  readonly startMs: number;
  readonly endMs: number;
}

function regionSpans(input: TimelineInput): (Span & { id: string; state: UiTaskState; tasks: number })[] {
  const regionOf = new Map<string, string>();
  for (const region of input.regions) for (const task of region.tasks) regionOf.set(task, region.id);
  const spans = new Map<string, { id: string; startMs: number; endMs: number; latest: Map<string, UiAttempt>; tasks: number }>();
  for (const region of input.regions) spans.set(region.id, { id: region.id, startMs: Infinity, endMs: -Infinity, latest: new Map(), tasks: region.tasks.length });
  for (const attempt of input.attempts) {
    const span = spans.get(regionOf.get(attempt.task) ?? '');
    if (!span) continue;
    span.startMs = Math.min(span.startMs, attempt.startMs);
    span.endMs = Math.max(span.endMs, attempt.endMs ?? input.nowMs);
    const latest = span.latest.get(attempt.task);
    if (!latest || latest.attempt < attempt.attempt) span.latest.set(attempt.task, attempt);
  }
  return [...spans.values()]
    .filter((span) => span.startMs !== Infinity)
    .map((span) => {
      const states = [...span.latest.values()].map((a) => a.state);
      const state: UiTaskState = states.length === span.tasks && states.every((st) => st === 'finished') ? 'finished' : states.some((st) => st === 'failed') ? 'failed' : 'running';
      return { id: span.id, startMs: span.startMs, endMs: span.endMs, state, tasks: span.tasks };
    });
}

function layoutTimeline(input: TimelineInput): { items: Item[]; lanes: Lane[]; height: number; plotWidth: number; endMs: number } {
  const spans = regionSpans(input);
  const endMs = Math.max(1, input.nowMs, ...input.attempts.map((a) => a.endMs ?? a.startMs), ...spans.map((r) => r.endMs));
  const plotWidth = Math.max(200, input.widthPx - LABEL_WIDTH - 10);
  const xOf = (ms: number): number => LABEL_WIDTH + (ms / endMs) * plotWidth;
  const items: Item[] = [];
  const lanes: Lane[] = [];
  let y = AXIS_HEIGHT;

  const addLane = <T extends Span>(label: string, intervals: readonly T[], maxRows: number, toItem: (interval: T, x: number, y: number, w: number) => Item): void => {
    const packed = packIntervals(intervals, maxRows);
    const rows = Math.max(1, packed.rows.length);
    packed.rows.forEach((row, r) => {
      const rowY = y + r * (ROW_HEIGHT + ROW_GAP);
      for (const interval of row) {
        const x = xOf(interval.startMs);
        items.push(toItem(interval, x, rowY, Math.max(1, xOf(interval.endMs) - x)));
      }
    });
    const height = rows * (ROW_HEIGHT + ROW_GAP) - ROW_GAP;
    lanes.push({ label, note: packed.overflow > 0 ? `+${packed.overflow} stacked on the last row` : undefined, y, height });
    y += height + LANE_GAP;
  };

  if (spans.length > 0) {
    addLane(`regions (${spans.length})`, spans, MAX_REGION_ROWS, (span, x, rowY, w) => ({
      x, y: rowY, w, colour: span.state === 'finished' ? REGION_COLOURS[0] as string : STATE_COLOURS[span.state],
      title: `region ${span.id}: ${span.tasks} tasks, ${span.state}\n${formatDuration(span.startMs)} → ${formatDuration(span.endMs)}`,
      attempt: undefined, region: span.id,
    }));
  }
  const byExecutor = new Map<string, (UiAttempt & Span)[]>();
  for (const attempt of input.attempts) {
    const lane = attempt.executor ?? LOCAL_LANE;
    let list = byExecutor.get(lane);
    if (!list) byExecutor.set(lane, (list = []));
    list.push({ ...attempt, endMs: attempt.endMs ?? input.nowMs });
  }
  for (const executor of [...byExecutor.keys()].sort()) {
    const attempts = byExecutor.get(executor) as (UiAttempt & Span)[];
    addLane(`${executor} (${attempts.length})`, attempts, MAX_ROWS_PER_LANE, (attempt, x, rowY, w) => ({
      x, y: rowY, w, colour: STATE_COLOURS[attempt.state] ?? '#94a3b8',
      title: `${attempt.task} attempt ${attempt.attempt} on ${executor}: ${attempt.state}\n${formatDuration(attempt.startMs)} → ${formatDuration(attempt.endMs)} (${formatDuration(attempt.endMs - attempt.startMs)})`,
      attempt, region: undefined,
    }));
  }
  return { items, lanes, height: Math.max(y, AXIS_HEIGHT + 20), plotWidth, endMs };
}

function ticks(endMs: number): number[] {
  const raw = endMs / 6;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((m) => m >= raw) ?? raw;
  const out: number[] = [];
  for (let t = 0; t <= endMs; t += step) out.push(t);
  return out;
}

function renderSvg(input: TimelineInput, laid: ReturnType<typeof layoutTimeline>): SVGSVGElement {
  const width = LABEL_WIDTH + laid.plotWidth + 10;
  const svg = s('svg', { width, height: laid.height, viewBox: `0 0 ${width} ${laid.height}`, 'data-timeline-svg': '' });
  for (const t of ticks(laid.endMs)) {
    const x = LABEL_WIDTH + (t / laid.endMs) * laid.plotWidth;
    svg.append(s('line', { x1: x, x2: x, y1: 14, y2: laid.height, stroke: '#e2e8f0' }), s('text', { x, y: 11, 'font-size': 10, 'text-anchor': 'middle', fill: '#64748b' }, formatDuration(t)));
  }
  for (const lane of laid.lanes) {
    svg.append(s('text', { x: 4, y: lane.y + 9, 'font-size': 11, fill: '#334155', 'data-lane': lane.label }, lane.label));
    if (lane.note) svg.append(s('text', { x: 4, y: lane.y + 22, 'font-size': 9, fill: '#64748b' }, lane.note));
  }
  for (const item of laid.items) {
    svg.append(
      s('rect', {
        x: item.x, y: item.y, width: item.w, height: ROW_HEIGHT, rx: 2, fill: item.colour,
        'data-attempt': item.attempt ? `${item.attempt.task}@${item.attempt.attempt}` : undefined,
        'data-state': item.attempt?.state, 'data-region-span': item.region,
      }, s('title', {}, item.title)),
    );
  }
  for (const failover of input.failovers) {
    const x = LABEL_WIDTH + (failover.atMs / laid.endMs) * laid.plotWidth;
    svg.append(s('line', { x1: x, x2: x, y1: 14, y2: laid.height, stroke: '#dc2626', 'stroke-width': 1.5, 'data-failover-marker': failover.failedTask ?? 'global' }, s('title', {}, `failover: ${failedWhat(failover)}`)));
  }
  return svg;
}

function renderCanvas(input: TimelineInput, laid: ReturnType<typeof layoutTimeline>, tooltip: HTMLElement): HTMLCanvasElement {
  const width = LABEL_WIDTH + laid.plotWidth + 10;
  const ratio = window.devicePixelRatio || 1;
  const canvas = h('canvas', { width: Math.round(width * ratio), height: Math.round(laid.height * ratio), style: `width:${width}px;height:${laid.height}px`, 'data-timeline-canvas': '' });
  const ctx = canvas.getContext('2d');
  if (!ctx) return canvas;
  ctx.scale(ratio, ratio);
  ctx.font = '10px system-ui, sans-serif';
  ctx.textAlign = 'center';
  for (const t of ticks(laid.endMs)) {
    const x = LABEL_WIDTH + (t / laid.endMs) * laid.plotWidth;
    ctx.fillStyle = '#e2e8f0';
    ctx.fillRect(x, 14, 1, laid.height - 14);
    ctx.fillStyle = '#64748b';
    ctx.fillText(formatDuration(t), x, 11);
  }
  ctx.textAlign = 'left';
  ctx.font = '11px system-ui, sans-serif';
  ctx.fillStyle = '#334155';
  for (const lane of laid.lanes) ctx.fillText(lane.label, 4, lane.y + 9, LABEL_WIDTH - 8);
  ctx.font = '9px system-ui, sans-serif';
  ctx.fillStyle = '#64748b';
  for (const lane of laid.lanes) if (lane.note) ctx.fillText(lane.note, 4, lane.y + 22, LABEL_WIDTH - 8);
  for (const item of laid.items) {
    ctx.fillStyle = item.colour;
    ctx.fillRect(item.x, item.y, item.w, ROW_HEIGHT);
  }
  ctx.fillStyle = '#dc2626';
  for (const failover of input.failovers) ctx.fillRect(LABEL_WIDTH + (failover.atMs / laid.endMs) * laid.plotWidth, 14, 1.5, laid.height - 14);
  canvas.addEventListener('mousemove', (event) => {
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const hit = laid.items.find((item) => x >= item.x && x <= item.x + item.w && y >= item.y && y <= item.y + ROW_HEIGHT);
    if (!hit) {
      tooltip.hidden = true;
      return;
    }
    tooltip.hidden = false;
    tooltip.textContent = hit.title;
    tooltip.style.left = `${x + 12}px`;
    tooltip.style.top = `${y + 12}px`;
  });
  canvas.addEventListener('mouseleave', () => (tooltip.hidden = true));
  return canvas;
}

export function renderTimeline(input: TimelineInput): HTMLElement {
  const laid = layoutTimeline(input);
  const mode = input.attempts.length > CANVAS_THRESHOLD ? 'canvas' : 'svg';
  const tooltip = h('div', { class: 'tooltip', hidden: true });
  const drawing = mode === 'canvas' ? renderCanvas(input, laid, tooltip) : renderSvg(input, laid);
  const executors = new Set(input.attempts.map((a) => a.executor ?? LOCAL_LANE)).size;
  return h('div', { class: 'panel timeline-wrap', 'data-timeline-mode': mode, 'data-attempts': input.attempts.length, 'data-lanes': laid.lanes.length },
    h('div', { class: 'muted' }, `${input.attempts.length} attempts on ${executors} executor${executors === 1 ? '' : 's'}, ${input.regions.length} regions`),
    drawing, tooltip);
}
