/** One Prometheus metric family: its samples, each with labels and a value. */
export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  readonly samples: readonly { readonly labels?: Readonly<Record<string, string>>; readonly value: number }[];
}

const escapeLabel = (value: string): string => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (value: string): string => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

/**
 * The Prometheus text exposition format (version 0.0.4) of `families`: `# HELP`, `# TYPE`, then one line per
 * sample. A family without samples is written with its HELP and TYPE only (promtool accepts it).
 */
export function formatPrometheusText(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels ?? {});
      const text = labels.length === 0 ? '' : `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
      lines.push(`${family.name}${text} ${formatValue(sample.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
