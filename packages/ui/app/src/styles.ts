// The app's style sheet, injected once at start (a string, so the in-memory bundle of main.ts needs no CSS file).
import type { UiTaskState } from '../../src/api/ui-api.js';

export const STATE_COLOURS: Readonly<Record<UiTaskState, string>> = {
  created: '#cbd5e1',
  deployed: '#93c5fd',
  running: '#3b82f6',
  finished: '#22c55e',
  failed: '#ef4444',
  reset: '#f59e0b',
};

export const REGION_COLOURS = ['#7c3aed', '#0891b2', '#db2777', '#65a30d', '#ea580c', '#0d9488', '#4f46e5', '#b45309'];

const CSS = `
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: #0f172a; background: #f8fafc; }
header.top { display: flex; gap: 24px; align-items: center; padding: 10px 20px; background: #0f172a; color: #f8fafc; }
header.top a { color: #cbd5e1; text-decoration: none; }
header.top a.active, header.top a:hover { color: #fff; }
header.top .brand { font-weight: 700; letter-spacing: .04em; color: #fff; }
main { padding: 16px 20px 40px; }
h1 { font-size: 20px; margin: 0 0 12px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
table { border-collapse: collapse; background: #fff; }
th, td { padding: 5px 10px; border-bottom: 1px solid #e2e8f0; text-align: left; white-space: nowrap; }
th { font-weight: 600; color: #475569; background: #f1f5f9; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: #64748b; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 9px; font-size: 12px; font-weight: 600; color: #fff; background: #64748b; }
.badge.running { background: #3b82f6; } .badge.succeeded { background: #16a34a; } .badge.failed { background: #dc2626; }
.badge.cancelled { background: #6b7280; } .badge.unfinished { background: #d97706; } .badge.unreadable { background: #7f1d1d; }
.panel { background: #fff; border: 1px solid #e2e8f0; border-radius: 6px; padding: 12px; overflow: auto; }
.counters { display: flex; flex-wrap: wrap; gap: 10px; }
.counter { background: #fff; border: 1px solid #e2e8f0; border-radius: 6px; padding: 8px 12px; min-width: 130px; }
.counter .value { font-size: 18px; font-weight: 600; font-variant-numeric: tabular-nums; }
.counter .label { font-size: 12px; color: #64748b; }
.bar { height: 6px; background: #e2e8f0; border-radius: 3px; overflow: hidden; margin-top: 4px; }
.bar > div { height: 100%; background: #22c55e; }
.message { max-width: 720px; margin: 40px auto; background: #fff; border: 1px solid #e2e8f0; border-radius: 8px; padding: 24px; }
.message h1 { font-size: 22px; }
.error-text { color: #b91c1c; white-space: pre-wrap; }
.failover { background: #fff; border: 1px solid #fecaca; border-left: 4px solid #ef4444; border-radius: 6px; padding: 10px 12px; margin-bottom: 8px; }
.failover .cause { color: #b91c1c; font-family: ui-monospace, monospace; white-space: pre-wrap; }
.failover details { margin-top: 4px; }
.failover .tasks { font-family: ui-monospace, monospace; font-size: 12px; white-space: normal; word-break: break-all; }
.legend { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 8px; font-size: 12px; }
.legend .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: middle; }
svg text { font-family: system-ui, sans-serif; }
.dag-node text.name { font-weight: 600; font-size: 12px; }
.dag-node text.detail { font-size: 11px; fill: #1e293b; }
.dag-edge-label { font-size: 10px; fill: #334155; }
.timeline-wrap { position: relative; }
.tooltip { position: absolute; pointer-events: none; background: #0f172a; color: #f8fafc; font-size: 12px; padding: 4px 8px; border-radius: 4px; white-space: pre; z-index: 2; }
dl.kv { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 0; }
dl.kv dt { color: #64748b; } dl.kv dd { margin: 0; font-family: ui-monospace, monospace; }
`;

export function installStyles(doc: Document): void {
  if (doc.getElementById('weft-styles')) return;
  const style = doc.createElement('style');
  style.id = 'weft-styles';
  style.textContent = CSS;
  doc.head.append(style);
}
