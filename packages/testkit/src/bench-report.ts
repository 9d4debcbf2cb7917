// The figures of one benchmark (docs/DESIGN.md, contract 4): one JSON line per figure, each with its
// baseline measured in the same run, plus a table for people. Shared by every package's benchmarks.

/** One figure, exactly the shape of contract 4. */
export interface Figure {
  bench: string;
  metric: string;
  unit: string;
  value: number;
  baseline: string;
  baselineValue: number;
  ratio: number;
}

export const round = (x: number, digits = 3): number => Math.round(x * 10 ** digits) / 10 ** digits;

/** The median of `values` (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export class BenchReport {
  readonly figures: Figure[] = [];
  readonly rows: string[][] = [];

  constructor(private readonly bench: string) {}

  /** Records a figure against its baseline; returns it. */
  report(metric: string, unit: string, value: number, baseline: string, baselineValue: number): Figure {
    const figure = { bench: this.bench, metric, unit, value: round(value), baseline, baselineValue: round(baselineValue), ratio: round(value / baselineValue) };
    this.figures.push(figure);
    return figure;
  }

  /** Adds a row to the table for people. */
  row(...cells: string[]): void {
    this.rows.push(cells);
  }

  /** Prints one JSON line per figure. */
  printFigures(): void {
    for (const figure of this.figures) console.log(JSON.stringify(figure));
  }

  /** Prints `title`, the table under `header`, then one JSON line per figure. */
  print(title: string, header: readonly string[]): void {
    console.log(`\n${title}\n`);
    const widths = header.map((_, i) => Math.max(...[header, ...this.rows].map((r) => (r[i] ?? '').length)));
    for (const r of [header, ...this.rows]) console.log(r.map((cell, i) => (cell ?? '').padEnd(widths[i]!)).join('  ').trimEnd());
    console.log('');
    this.printFigures();
  }
}
