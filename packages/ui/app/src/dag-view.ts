// The job graph as SVG: the layered layout of dag-layout.ts, left to right. A vertex box shows its name,
// parallelism, state (fill colour) and records in/out, with a bar of finished subtasks; an edge is a path through
// its dummies, dashed when its partitions are persisted (blocking), labelled with distribution, partition type
// and bytes. Pipelined regions: regions touching the same set of vertices form one group; a group that spans
// several vertices gets its colour as a halo round each member and, where no other vertex lies inside, an outline
// round them all; the legend lists every group with its region and task counts.
// Data attributes for tests and tools: data-vertex, data-edge (+ data-source/-target), data-region-group.
import type { UiEdge, UiRegion, UiVertex } from '../../src/api/ui-api.js';
import { layoutDag } from './dag-layout.js';
import { h, s } from './dom.js';
import { formatBytes, formatCount } from './format.js';
import { REGION_COLOURS, STATE_COLOURS } from './styles.js';

const NODE_WIDTH = 190;
const NODE_HEIGHT = 62;
const GAP_X = 180;
const GAP_Y = 40;
const DUMMY_HEIGHT = 14;
const MARGIN = 24;

interface RegionGroup {
  readonly key: string;
  readonly vertices: readonly string[];
  regions: number;
  tasks: number;
}

export function groupRegions(regions: readonly UiRegion[]): RegionGroup[] {
  const groups = new Map<string, RegionGroup>();
  for (const region of regions) {
    const vertices = [...new Set(region.vertices)].sort();
    const key = vertices.join('\u0000');
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { key, vertices, regions: 0, tasks: 0 }));
    group.regions++;
    group.tasks += region.tasks.length;
  }
  return [...groups.values()].sort((a, b) => b.vertices.length - a.vertices.length || b.regions - a.regions);
}

const PIPELINED_TYPES = new Set(['PIPELINED', 'PIPELINED_BOUNDED', 'PIPELINED_APPROXIMATE', 'HYBRID_FULL', 'HYBRID_SELECTIVE']);

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

interface Box {
  readonly x: number;
  readonly y: number;
}

export function renderDag(vertices: readonly UiVertex[], edges: readonly UiEdge[], regions: readonly UiRegion[]): HTMLElement {
  const layout = layoutDag({ nodes: vertices.map((v) => v.id), edges });
  const layerHeights = layout.layers.map((layer) => layer.reduce((sum, entry) => sum + (entry.startsWith('\u0000') ? DUMMY_HEIGHT : NODE_HEIGHT) + GAP_Y, -GAP_Y));
  const height = Math.max(NODE_HEIGHT, ...layerHeights) + 2 * MARGIN;
  const width = layout.layers.length * (NODE_WIDTH + GAP_X) - GAP_X + 2 * MARGIN;

  // Each entry's top-left corner; layers centred vertically.
  const boxes = new Map<string, Box>();
  layout.layers.forEach((layer, l) => {
    let y = MARGIN + (height - 2 * MARGIN - (layerHeights[l] as number)) / 2;
    for (const entry of layer) {
      boxes.set(entry, { x: MARGIN + l * (NODE_WIDTH + GAP_X), y });
      y += (entry.startsWith('\u0000') ? DUMMY_HEIGHT : NODE_HEIGHT) + GAP_Y;
    }
  });

  const svg = s('svg', { width, height, viewBox: `0 0 ${width} ${height}`, 'data-dag': '', role: 'img', 'aria-label': 'job graph' });
  svg.append(
    s('defs', {}, s('marker', { id: 'weft-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#64748b' }))),
  );

  const groups = groupRegions(regions);
  const colourOf = new Map<string, string>();
  groups.forEach((g, i) => colourOf.set(g.key, REGION_COLOURS[i % REGION_COLOURS.length] as string));
  const spanning = groups.filter((g) => g.vertices.length > 1);

  // Outlines of spanning groups whose bounding box holds no other vertex.
  const outlines = s('g', { class: 'dag-regions' });
  const haloDepth = new Map<string, number>();
  for (const group of spanning) {
    const colour = colourOf.get(group.key) as string;
    const members = group.vertices.filter((v) => boxes.has(v));
    for (const v of members) {
      const depth = (haloDepth.get(v) ?? 0) + 1;
      haloDepth.set(v, depth);
      const box = boxes.get(v) as Box;
      const pad = 3 + depth * 4;
      outlines.append(s('rect', { x: box.x - pad, y: box.y - pad, width: NODE_WIDTH + 2 * pad, height: NODE_HEIGHT + 2 * pad, rx: 8 + pad, fill: 'none', stroke: colour, 'stroke-width': 2, 'data-region-group': group.key.split('\u0000').join(','), 'data-region-halo': v }));
    }
    const xs = members.map((v) => (boxes.get(v) as Box).x);
    const ys = members.map((v) => (boxes.get(v) as Box).y);
    const x0 = Math.min(...xs) - 20;
    const y0 = Math.min(...ys) - 20;
    const x1 = Math.max(...xs) + NODE_WIDTH + 20;
    const y1 = Math.max(...ys) + NODE_HEIGHT + 20;
    const memberSet = new Set(members);
    const clean = [...boxes].every(([id, b]) => id.startsWith('\u0000') || memberSet.has(id) || b.x + NODE_WIDTH < x0 || b.x > x1 || b.y + NODE_HEIGHT < y0 || b.y > y1);
    if (clean && members.length > 1) {
      outlines.append(
        s('rect', { x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 14, fill: colour, 'fill-opacity': 0.05, stroke: colour, 'stroke-dasharray': '6 4', 'data-region-outline': group.key.split('\u0000').join(',') },
          s('title', {}, `pipelined regions over ${members.join(', ')}: ${group.regions} regions, ${group.tasks} tasks`)),
      );
    }
  }
  svg.append(outlines);

  const edgeLayer = s('g', { class: 'dag-edges' });
  edges.forEach((edge, index) => {
    const route = layout.routes[index] ?? [];
    if (route.length < 2) return;
    const entries = route.map((place) => (layout.layers[place.layer] as string[])[place.order] as string);
    const points = entries.map((entry, k) => {
      const box = boxes.get(entry) as Box;
      const dummy = entry.startsWith('\u0000');
      const midY = box.y + (dummy ? DUMMY_HEIGHT : NODE_HEIGHT) / 2;
      if (k === 0) return [box.x + NODE_WIDTH, midY] as const;
      if (k === entries.length - 1) return [box.x, midY] as const;
      return [box.x + NODE_WIDTH / 2, midY] as const;
    });
    let d = `M${points[0]![0]},${points[0]![1]}`;
    for (let k = 1; k < points.length; k++) {
      const [px, py] = points[k - 1]!;
      const [x, y] = points[k]!;
      const mx = (px + x) / 2;
      d += ` C${mx},${py} ${mx},${y} ${x},${y}`;
    }
    const pipelined = PIPELINED_TYPES.has(edge.partitionType);
    const kind = `${edge.distribution} · ${edge.partitionType}`;
    const size = `${formatBytes(edge.bytes)} · ${formatCount(edge.records)} rec`;
    const [lx0, ly0] = points[0]!;
    const [lx1, ly1] = points[1]!;
    const lx = (lx0 + lx1) / 2;
    const ly = (ly0 + ly1) / 2 - 16;
    const labelWidth = Math.max(kind.length, size.length) * 5.6 + 8;
    edgeLayer.append(
      s('g', { class: 'dag-edge', 'data-edge': edge.id, 'data-source': edge.source, 'data-target': edge.target, 'data-partition-type': edge.partitionType },
        s('title', {}, `${edge.id}\n${edge.distribution}, ${edge.partitionType}\n${formatCount(edge.records)} records, ${formatBytes(edge.bytes)}`),
        s('path', { d, fill: 'none', stroke: '#64748b', 'stroke-width': 1.6, 'stroke-dasharray': pipelined ? undefined : '5 4', 'marker-end': 'url(#weft-arrow)' }),
        s('rect', { x: lx - labelWidth / 2, y: ly - 10, width: labelWidth, height: 26, rx: 3, fill: '#ffffff', 'fill-opacity': 0.9 }),
        s('text', { x: lx, y: ly, 'text-anchor': 'middle', class: 'dag-edge-label', 'data-label': 'kind' }, kind),
        s('text', { x: lx, y: ly + 12, 'text-anchor': 'middle', class: 'dag-edge-label', 'data-label': 'size' }, size)),
    );
  });
  svg.append(edgeLayer);

  const nodeLayer = s('g', { class: 'dag-nodes' });
  for (const vertex of vertices) {
    const box = boxes.get(vertex.id);
    if (!box) continue;
    const fill = STATE_COLOURS[vertex.state] ?? '#cbd5e1';
    const done = vertex.parallelism > 0 ? Math.min(1, vertex.tasksFinished / vertex.parallelism) : 0;
    nodeLayer.append(
      s('g', { class: 'dag-node', 'data-vertex': vertex.id, 'data-state': vertex.state, transform: `translate(${box.x},${box.y})` },
        s('title', {}, `${vertex.name} (${vertex.id})\nparallelism ${vertex.parallelism}, ${vertex.tasksFinished} finished, ${vertex.state}\nrecords in ${vertex.recordsIn}, out ${vertex.recordsOut}`),
        s('rect', { width: NODE_WIDTH, height: NODE_HEIGHT, rx: 8, fill: '#ffffff', stroke: fill, 'stroke-width': 2 }),
        s('rect', { width: 8, height: NODE_HEIGHT, rx: 3, fill }),
        s('text', { x: 16, y: 17, class: 'name' }, truncate(vertex.name, 26)),
        s('text', { x: 16, y: 33, class: 'detail' }, `p=${vertex.parallelism} · ${vertex.state} · ${vertex.tasksFinished}/${vertex.parallelism}`),
        s('text', { x: 16, y: 48, class: 'detail' }, `in ${formatCount(vertex.recordsIn)} · out ${formatCount(vertex.recordsOut)}`),
        s('rect', { x: 16, y: 53, width: NODE_WIDTH - 28, height: 4, rx: 2, fill: '#e2e8f0' }),
        s('rect', { x: 16, y: 53, width: (NODE_WIDTH - 28) * done, height: 4, rx: 2, fill: STATE_COLOURS.finished })),
    );
  }
  svg.append(nodeLayer);

  const legend = h('div', { class: 'legend', 'data-region-legend': '' },
    ...Object.entries(STATE_COLOURS).map(([state, colour]) => h('span', {}, h('span', { class: 'swatch', style: `background:${colour}` }), state)),
    h('span', { class: 'muted' }, 'dashed edge: blocking (persisted) · solid: pipelined'),
  );
  const regionList = h('div', { class: 'legend', 'data-region-groups': String(groups.length) },
    h('span', { class: 'muted' }, `${regions.length} pipelined regions:`),
    ...groups.slice(0, 40).map((g) =>
      h('span', { 'data-region-group-item': g.vertices.join(',') },
        h('span', { class: 'swatch', style: `background:${g.vertices.length > 1 ? colourOf.get(g.key) : '#e2e8f0'}` }),
        `${g.vertices.join(' + ')} — ${g.regions} region${g.regions === 1 ? '' : 's'}, ${g.tasks} tasks`)),
    groups.length > 40 ? h('span', { class: 'muted' }, `… ${groups.length - 40} more groups`) : null,
  );
  return h('div', {}, h('div', { class: 'panel' }, svg), legend, regionList);
}
